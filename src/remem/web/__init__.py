"""The page of ``remem serve``: people review, search and change what the assistants remember, in a
browser, signed in with a token of the store (the MCP tools' tokens and pins).

Server-rendered HTML (Jinja2, the ``mcp`` extra) that needs no JavaScript; ``pages`` is the
application (sign-in, sessions, CSRF, headers), ``sessions`` the signed-in browsers, ``views`` the
routes that read, ``changes`` those that write, ``display`` the templates and how memories are shown.
Imported only when a server runs.
"""
