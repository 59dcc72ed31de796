"""The direct wire (setting ``wire: direct``): dynorm's JSON codec under botocore's transport.

botocore keeps everything but the shape walk: credentials, endpoint resolution, SigV4 signing,
retries, error parsing and every event hook. Only the bodies of the data-plane operations
(:data:`~dynorm.backend.wire_json.DIRECT_OPERATIONS`) are encoded and decoded by
:mod:`dynorm.backend.wire_json`, through two public seams of botocore:

- **responses**: the session component ``response_parser_factory`` (``Session.register_component``)
  makes each client's parser. :class:`DirectParserFactory` hands out botocore's own JSON parser
  wrapped in :class:`DirectParser`, which decodes a successful data-plane response in one
  ``loads`` and takes ``ResponseMetadata`` from botocore's parser; errors, other operations and
  anything that is not a JSON object go to botocore's parser unchanged, so error codes,
  ``ResponseMetadata``, retries and hooks are botocore's. aiobotocore takes the same component
  (:class:`AioDirectParser` awaits its parser).
- **requests**: botocore has no serializer component, so two events carry the body
  (:func:`install`). At ``before-endpoint-resolution`` (emitted once ``before-parameter-build``
  has run, every handler of it, however registered, and botocore's idempotency-token filler;
  before the endpoint rules read the parameters and the serializer walks them) the full
  parameters are encoded into the request context and replaced by
  :func:`~dynorm.backend.wire_json.routing_params` (the scalars and table names the endpoint
  rules read); at ``before-call`` (registered first: the user's handlers see
  the real body) the encoded body replaces the one botocore serialized. The request is then
  signed, sent, retried (with the same body) and hooked (``before-send``, ``needs-retry``) by
  botocore as before.

Parameter validation is off on both wires (``Config(parameter_validation=False)``): dynorm's
planners build every request and DynamoDB validates it.
"""

from __future__ import annotations

from typing import Any, Callable

from .wire_json import DIRECT_OPERATIONS, Unsupported, dumps, output_decoder, routing_params

__all__ = ["DirectParser", "AioDirectParser", "DirectParserFactory", "install"]

#: the request-context key carrying the encoded body from ``before-parameter-build`` to ``before-call``
_BODY = "dynorm.wire.body"
_UNSUPPORTED: Any = object()


class DirectParser:
    """botocore's JSON response parser, with the data-plane successes decoded by dynorm's codec.

    Args:
        base: botocore's parser for the ``json`` protocol (its public ``parse`` is all that is used).
    """

    def __init__(self, base: Any) -> None:
        self._base = base
        self._decoders: dict[str, Any] = {}  # shape name -> decoder, or _UNSUPPORTED

    def _decoder(self, response: dict[str, Any], shape: Any) -> Callable[[bytes], dict[str, Any]] | None:
        """The codec's decoder for this response, or ``None`` when botocore's parser takes it."""
        if shape is None or response["status_code"] >= 300:
            return None
        operation = (response.get("context") or {}).get("operation_name")
        if operation not in DIRECT_OPERATIONS or shape.name != f"{operation}Output":
            return None
        decoder = self._decoders.get(shape.name)
        if decoder is None:
            try:
                decoder = output_decoder(shape)
            except Unsupported:  # a botocore whose model this codec cannot mirror: botocore parses
                decoder = _UNSUPPORTED
            self._decoders[shape.name] = decoder
        return None if decoder is _UNSUPPORTED else decoder  # type: ignore[no-any-return]

    def _decode(self, decoder: Callable[[bytes], dict[str, Any]], response: dict[str, Any]) -> dict[str, Any] | None:
        body = response.get("body")
        if not isinstance(body, (bytes, bytearray)):
            return None
        try:
            return decoder(bytes(body))
        except (ValueError, TypeError, AttributeError):  # not DynamoDB's JSON: botocore says what it is
            return None

    def parse(self, response: dict[str, Any], shape: Any) -> dict[str, Any]:
        """Parse one HTTP response as botocore's JSON parser does (``ResponseParser.parse``).

        Args:
            response: botocore's response dict (``status_code``, ``headers``, ``body``, ``context``).
            shape: the operation's output shape (or an error shape).

        Returns:
            The parsed response, ``ResponseMetadata`` included.
        """
        decoder = self._decoder(response, shape)
        parsed = None if decoder is None else self._decode(decoder, response)
        if parsed is None:
            return self._base.parse(response, shape)  # type: ignore[no-any-return]
        parsed["ResponseMetadata"] = self._base.parse(response, None)["ResponseMetadata"]
        return parsed


class AioDirectParser(DirectParser):
    """:class:`DirectParser` for aiobotocore, whose parsers' ``parse`` is a coroutine."""

    async def parse(self, response: dict[str, Any], shape: Any) -> dict[str, Any]:  # type: ignore[override]
        """Parse one HTTP response as aiobotocore's JSON parser does (see :meth:`DirectParser.parse`)."""
        decoder = self._decoder(response, shape)
        parsed = None if decoder is None else self._decode(decoder, response)
        if parsed is None:
            return await self._base.parse(response, shape)  # type: ignore[no-any-return]
        parsed["ResponseMetadata"] = (await self._base.parse(response, None))["ResponseMetadata"]
        return parsed


class DirectParserFactory:
    """A ``response_parser_factory`` session component: botocore's factory, with the ``json``
    protocol's parser wrapped in :class:`DirectParser` (or :class:`AioDirectParser`).

    Args:
        base: botocore's ``ResponseParserFactory()`` (aiobotocore's ``AioResponseParserFactory()``).
        parser_class: :class:`DirectParser` or :class:`AioDirectParser`.
    """

    def __init__(self, base: Any, parser_class: type[DirectParser] = DirectParser) -> None:
        self._base = base
        self._parser_class = parser_class
        self._json: DirectParser | None = None

    def set_parser_defaults(self, **kwargs: Any) -> None:
        """Pass parser defaults (``timestamp_parser``, ``blob_parser``) on to botocore's factory."""
        self._base.set_parser_defaults(**kwargs)
        self._json = None

    def create_parser(self, protocol_name: str) -> Any:
        """Return the parser for ``protocol_name``; ``json``'s is built once and shared (botocore's
        parsers hold no per-response state; its clients share one too)."""
        if protocol_name != "json":
            return self._base.create_parser(protocol_name)
        parser = self._json
        if parser is None:
            parser = self._json = self._parser_class(self._base.create_parser("json"))
        return parser


def _encode_body(params: dict[str, Any], model: Any, context: dict[str, Any] | None = None, **_: Any) -> None:
    """``before-endpoint-resolution``: encode the full parameters; leave botocore the routing ones."""
    if model.name not in DIRECT_OPERATIONS or context is None:
        return
    try:
        body = dumps(params)
    except (TypeError, ValueError):  # a value JSON cannot hold: botocore's serializer raises its own error
        return
    context[_BODY] = body
    routing = routing_params(params)
    params.clear()
    params.update(routing)


def _send_body(params: dict[str, Any], context: dict[str, Any] | None = None, **_: Any) -> None:
    """``before-call``: the encoded body replaces the one botocore serialized from the routing parameters."""
    body = None if context is None else context.pop(_BODY, None)
    if body is not None:
        params["body"] = body


def install(client: Any) -> None:
    """Put the direct request codec on one botocore (or aiobotocore) DynamoDB client.

    The client must come from a session whose ``response_parser_factory`` is a
    :class:`DirectParserFactory` for its responses to be decoded directly too. Only this
    client's event emitter is changed.

    Args:
        client: a DynamoDB client (``session.create_client("dynamodb", ...)``).
    """
    events = client.meta.events
    service = client.meta.service_model.service_id.hyphenize()
    # after every before-parameter-build handler: one the application registers last on the generic
    # event runs after any handler on it registered earlier, so encoding there could lose its change
    events.register_last(f"before-endpoint-resolution.{service}", _encode_body, unique_id="dynorm-wire-encode")
    for operation in sorted(DIRECT_OPERATIONS):
        events.register_first(f"before-call.{service}.{operation}", _send_body,
                              unique_id=f"dynorm-wire-body-{operation}")
