"""Recorded traffic, read one way for every command: :mod:`.usage` (the one
usage reader), :mod:`.exchange` (:class:`~.exchange.Exchange`, one recorded
request), :mod:`.sources` (the recording readers and the one folder listing),
:mod:`.apart` (the one set-apart rule). ``replay``, ``tokens-check``,
``scan`` and the survey read recordings through them."""

__all__: list[str] = []
