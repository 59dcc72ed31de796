"""The only package that talks to DynamoDB: botocore clients, request records, error wrapping, steps.

Every request goes through :func:`call` (or :func:`acall`), which records it (operation, table,
index, consumed capacity, items) for :func:`capture` blocks and queryset ``stats``, and wraps
botocore errors once into dynorm errors (the botocore error stays as ``__cause__``).
Retries of throttled requests are botocore's (standard mode, ``settings.max_attempts``).

One module per job, each importing only those above it in this list (no circle):

- :mod:`.records`: :class:`Stats`, :class:`RequestRecord`, :func:`capture`;
- :mod:`.errors`: botocore errors and foreign answers as dynorm errors;
- :mod:`.clients`: the botocore client per connection, the aiobotocore client per event loop,
  hooks (:func:`register_hook`), :func:`reset_client`;
- :mod:`.retries`: :class:`RetryPolicy`, :func:`no_retries_after`;
- :mod:`.calls`: :func:`call`, :func:`acall`;
- :mod:`.steps`: :class:`Send`/:class:`Sleep`/:class:`Emit` and the drivers :func:`stream`,
  :func:`drive`, :func:`astream`, :func:`adrive`;
- :mod:`.paging`: :class:`Pager`, :func:`paginate`, :func:`apaginate`.

Use the names re-exported here (``dynorm.backend.call``); patch module state where it lives
(``dynorm.backend.clients._build_aclient``).
"""

from __future__ import annotations

from .calls import acall, call
from .clients import (
    LOCAL_CREDENTIALS,
    aclient,
    aclose,
    client,
    credentials_for,
    register_hook,
    reset_client,
    unregister_hook,
)
from .errors import describe_endpoint
from .paging import Pager, apaginate, page_steps, paginate
from .records import Capture, RequestRecord, Stats, capture, tables_of
from .retries import RetryPolicy, no_retries_after
from .steps import (
    Emit,
    Send,
    SendAll,
    SendGuard,
    Sleep,
    Steps,
    adrive,
    astream,
    collect,
    drive,
    first_emit,
    set_send_guard,
    stream,
)

__all__ = ["client", "call", "paginate", "aclient", "acall", "apaginate", "aclose", "drive", "adrive", "stream",
           "collect", "first_emit", "astream", "Send", "SendAll", "Sleep", "Emit",
           "Pager", "RetryPolicy", "register_hook",
           "unregister_hook", "set_send_guard", "capture", "Capture", "RequestRecord", "Stats", "LOCAL_CREDENTIALS",
           "credentials_for", "describe_endpoint", "tables_of", "no_retries_after", "reset_client", "page_steps",
           "Steps", "SendGuard"]
