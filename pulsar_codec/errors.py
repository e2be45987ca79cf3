"""Errors of the protocol layer (one root, h11-style local/remote split).

- ``RemoteProtocolError`` means the *peer* broke the framing rules; the connection cannot go on,
  and ``server_error`` hints what to answer (an ERROR frame) before closing.
- ``LocalProtocolError`` means *we* tried to send something the protocol forbids; it is a bug in
  the caller, never the peer's fault.
- a well-delimited frame whose command is unknown or incomplete is not an error here: the codec
  turns it into an ``InvalidCommand`` event so the service can answer that request and keep the
  connection (framing is still in sync).
"""


class ProtocolError(Exception):
    def __init__(self, message: str, server_error: str = "UnknownError"):
        super().__init__(message)
        self.server_error = server_error


class LocalProtocolError(ProtocolError):
    pass


class RemoteProtocolError(ProtocolError):
    pass
