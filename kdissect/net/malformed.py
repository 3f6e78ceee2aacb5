"""The one exception the packet-parsing stages raise, caught per packet by their caller."""


class Malformed(Exception):
    """A header that cannot be what it claims; the message names the layer and the reason."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
