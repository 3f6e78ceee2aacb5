"""What the core yields, in one place: exchanges of frames with their headers, notices, connection summaries.

Every stage above the core (views, filters, the Spark rows) reads these values and nothing else of the core.
"""

from typing import Union

from kdissect.events.connection import ConnectionEnd, ConnectionInfo, Ending, Endpoint, TlsInfo, TlsTotals
from kdissect.events.exchange import Exchange, Message, Status, Vantage, answered, new_exchange, new_message
from kdissect.events.frame import Frame, new_frame
from kdissect.events.headers import (
    SASL_TOKEN,
    RequestHeader,
    ResponseHeader,
    SaslTokenHeader,
    TaggedField,
    new_request_header,
    new_response_header,
)
from kdissect.events.notice import Notice

Event = Union[Exchange, Notice, ConnectionEnd]

__all__ = [
    "ConnectionEnd",
    "ConnectionInfo",
    "Endpoint",
    "Ending",
    "Event",
    "Exchange",
    "Frame",
    "Message",
    "Notice",
    "RequestHeader",
    "ResponseHeader",
    "SASL_TOKEN",
    "SaslTokenHeader",
    "Status",
    "answered",
    "TaggedField",
    "TlsInfo",
    "TlsTotals",
    "Vantage",
    "new_exchange",
    "new_frame",
    "new_message",
    "new_request_header",
    "new_response_header",
]
