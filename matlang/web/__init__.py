"""``matlang serve``: a local playground page and its JSON API (``pip install "matlang[web]"``).

:mod:`matlang.web.service` computes the answers (plain functions of JSON, run in worker
processes under a time limit: :class:`matlang.web.service.Workers`); :mod:`matlang.web.app` is
the Starlette application that serves the page (``static/index.html``: HTML and JavaScript, no
build step) and the API.
"""
