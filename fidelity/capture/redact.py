"""Secret redaction for everything that captures or imports requests:
credentials are removed from headers, the URL and JSON body members named
like one, every value learned is scrubbed wherever else it appears, and
:func:`ensure_clean` refuses bytes that still hold one. The rules:
docs/ci-and-capture.md, "Secrets never reach disk"."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from ..errors import FidelityError, InputError

__all__ = [
    "REDACTED",
    "MIN_SECRET_LENGTH",
    "SecretLeak",
    "Redaction",
    "Redactor",
    "is_secret_header",
    "is_secret_param",
    "ensure_clean",
    "is_placeholder",
    "url_problem",
    "MalformedURL",
]

#: what a redacted value becomes (ASCII, no quote or backslash, so it can
#: replace bytes inside a JSON string without breaking it)
REDACTED = "[REDACTED]"

#: a learned secret shorter than this is not scrubbed from other places
#: (scrubbing every "abc" in a body would destroy it); header and query values
#: are removed by *name* whatever their length.
MIN_SECRET_LENGTH = 8

#: header names that always carry credentials (lower case)
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-auth-token",
        "x-amz-security-token",
        "x-goog-user-project",
    }
)
#: header names that look secret-ish but carry identifiers, not credentials:
#: Claude Code's per-run session UUID (2.1.x), which it also writes into the
#: body's ``metadata.user_id``; treating it as a secret would rewrite body
#: bytes that the provider keys nothing on and break byte identity
NOT_SECRET_HEADERS = frozenset({"x-claude-code-session-id"})
#: query parameter names that carry credentials (lower case)
SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "access_token",
        "token",
        "sig",
        "signature",
        "x-goog-api-key",
        "code",
        "password",
        "client_secret",
    }
)
#: body member names whose *string* values are credentials
SECRET_BODY_KEYS = frozenset({"api_key", "apikey", "api-key", "x-api-key", "authorization", "client_secret"})

_SECRETISH = re.compile(r"(auth|token|secret|passw|cookie|session|credential|signature|api[-_]?key)", re.I)
_BEARER = re.compile(r"^\s*(bearer|basic|token)\s+", re.I)


class SecretLeak(FidelityError):
    """Raised instead of writing bytes that still contain a known secret."""


def is_secret_header(name: str) -> bool:
    """True for header names that carry or may carry credentials."""
    low = name.strip().lower()
    if low in NOT_SECRET_HEADERS:
        return False
    return low in SECRET_HEADERS or bool(_SECRETISH.search(low))


def is_secret_param(name: str) -> bool:
    """True for URL query parameter names that carry credentials."""
    low = name.strip().lower()
    return low in SECRET_PARAMS or bool(_SECRETISH.search(low))


@dataclass
class Redaction:
    """What a redaction removed: names and pointers only, never values."""

    headers: list[str] = field(default_factory=list)
    query: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    url_userinfo: bool = False
    scrubbed: int = 0  # occurrences of learned secrets replaced elsewhere

    def names(self) -> list[str]:
        """A flat list for snapshot metadata: ``header:x-api-key``,
        ``query:key``, ``body:/api_key``, ``url:userinfo``, ``scrubbed:2``."""
        out = [f"header:{h}" for h in self.headers]
        out += [f"query:{q}" for q in self.query]
        out += [f"body:{p}" for p in self.body]
        if self.url_userinfo:
            out.append("url:userinfo")
        if self.scrubbed:
            out.append(f"scrubbed:{self.scrubbed}")
        return out


class Redactor:
    """Removes credentials and remembers the secret values it has seen: one
    per capture session, so a secret learned from one request's headers is
    scrubbed from every later request and file."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        for s in secrets:
            self.learn(s)

    # -- secrets ----------------------------------------------------------
    def learn(self, value: str | None) -> None:
        """Remember a secret value (and its bearer-less form) for scrubbing,
        unless a recorder already scrubbed it (:func:`is_placeholder`)."""
        if not value:
            return
        value = value.strip()
        stripped = _BEARER.sub("", value).strip()
        for candidate in {value, stripped}:
            if is_placeholder(candidate):
                continue
            if len(candidate) >= MIN_SECRET_LENGTH:
                self._secrets.add(candidate)
                enc = quote(candidate, safe="")
                if enc != candidate:
                    self._secrets.add(enc)
        # a cookie header: each cookie value is a secret of its own
        for piece in value.split(";"):
            if "=" in piece:
                v = piece.split("=", 1)[1].strip()
                if len(v) >= MIN_SECRET_LENGTH and not is_placeholder(v):
                    self._secrets.add(v)

    def _ordered(self) -> list[str]:
        # longest first so a secret containing another is replaced whole
        return sorted(self._secrets, key=len, reverse=True)

    def scrub_text(self, text: str, red: Redaction | None = None) -> str:
        for s in self._ordered():
            n = text.count(s)
            if n:
                text = text.replace(s, REDACTED)
                if red is not None:
                    red.scrubbed += n
        return text

    def scrub_bytes(self, data: bytes, red: Redaction | None = None) -> bytes:
        for s in self._ordered():
            b = s.encode("utf-8", "surrogatepass")
            n = data.count(b)
            if n:
                data = data.replace(b, REDACTED.encode())
                if red is not None:
                    red.scrubbed += n
        return data

    # -- parts of a request ----------------------------------------------
    def headers(
        self,
        items: Iterable[tuple[str, str]] | Mapping[str, str],
        red: Redaction | None = None,
        *,
        keep: Callable[[str], bool] | None = None,
    ) -> tuple[list[tuple[str, str]], Redaction]:
        """Lower-case header names; credential values become ``[REDACTED]``.
        ``keep(name)`` selects the other headers worth keeping; secret headers
        are always listed, redacted, so a reader knows one was sent."""
        red = red if red is not None else Redaction()
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        # learn first, so one header's secret is scrubbed from another header
        for name, value in pairs:
            if is_secret_header(name):
                self.learn(value)
        out: list[tuple[str, str]] = []
        for name, value in pairs:
            low = name.strip().lower()
            if is_secret_header(low):
                out.append((low, REDACTED))
                if low not in red.headers:
                    red.headers.append(low)
                continue
            if keep is not None and not keep(low):
                continue
            out.append((low, self.scrub_text(str(value), red)))
        return out, red

    def url(self, url: str, red: Redaction | None = None) -> str:
        """The URL with secret query values and userinfo replaced;
        :class:`MalformedURL` when it cannot be parsed (its secrets could not
        be found, so it is never written)."""
        red = red if red is not None else Redaction()
        problem = url_problem(url)
        if problem is not None:
            raise MalformedURL(problem)
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            self.learn(unquote(userinfo.split(":", 1)[1]) if ":" in userinfo else unquote(userinfo))
            netloc = f"{quote(REDACTED, safe='')}@{host}"
            red.url_userinfo = True
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            for k, v in pairs:
                if is_secret_param(k):
                    self.learn(v)
            rebuilt: list[str] = []
            for raw in query.split("&"):
                k = unquote(raw.split("=", 1)[0].replace("+", " "))
                if is_secret_param(k):
                    rebuilt.append(raw.split("=", 1)[0] + "=" + quote(REDACTED, safe=""))
                    if k.lower() not in red.query:
                        red.query.append(k.lower())
                else:
                    rebuilt.append(raw)
            query = "&".join(rebuilt)
        out = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
        return self.scrub_text(out, red)

    def body(self, body: bytes, red: Redaction | None = None) -> tuple[bytes, Redaction]:
        """Replace the string values of credential members (``api_key`` ...)
        in a JSON body by ``[REDACTED]``, byte-exactly elsewhere, then scrub
        learned secrets. Non-JSON bodies are only scrubbed."""
        red = red if red is not None else Redaction()
        spans = list(_secret_string_spans(body))
        if spans:
            out = bytearray()
            last = 0
            for pointer, start, end, value in spans:
                self.learn(value)
                out += body[last:start] + b'"' + REDACTED.encode() + b'"'
                last = end
                red.body.append(pointer)
            out += body[last:]
            body = bytes(out)
        return self.scrub_bytes(body, red), red

    def leaks(self, data: bytes) -> list[str]:
        """Names (not values) of known secrets found in ``data``, for an error message."""
        return [f"{s[:2]}… ({len(s)} chars)" for s in self._ordered() if s.encode("utf-8", "surrogatepass") in data]


_PLACEHOLDER_WORDS = re.compile(r"redacted|filtered|removed|hidden|masked|scrubbed|placeholder|dummy|fake|x{4,}", re.I)


def is_placeholder(value: str) -> bool:
    """True for a value a recorder already replaced (``REDACTED``, ``[REDACTED]``,
    ``***``, ``<redacted>``, ``sk-***``, ``<FILTERED>``...): once the placeholder
    words, asterisks, brackets and separators are removed, at most a short prefix
    such as ``sk`` remains. Such a value is not learned as a secret."""
    text = _BEARER.sub("", value.strip())
    if not text:
        return False
    rest, n_words = _PLACEHOLDER_WORDS.subn("", text)
    rest = re.sub(r"[\s*\[\]<>{}()_.:=\-\"'#]+", "", rest)
    if n_words == 0 and "*" not in text:
        return False
    return len(rest) <= 8


def ensure_clean(data: bytes, redactor: Redactor, *, what: str = "output") -> bytes:
    """Return ``data`` unchanged, or raise :class:`SecretLeak` when it still
    contains a secret the redactor knows. The last check before a write."""
    leaks = redactor.leaks(data)
    if leaks:
        raise SecretLeak(f"refusing to write {what}: it still contains a secret ({', '.join(leaks)})")
    return data


# -- JSON scanning -------------------------------------------------------------

_BODY_MEMBER = re.compile(
    rb'"(' + b"|".join(re.escape(k.encode()) for k in sorted(SECRET_BODY_KEYS)) + rb')"(\s*:\s*)"((?:[^"\\]|\\.)*)"',
    re.I,
)


def _secret_string_spans(body: bytes) -> Iterator[tuple[str, int, int, str]]:
    """``(label, start, end, value)`` for every JSON member named like a
    credential whose value is a string, anywhere in ``body`` (``body[start:end]``
    is the quoted value): a byte scan, so malformed or duplicate-key bodies
    are covered too."""
    for m in _BODY_MEMBER.finditer(body):
        start = m.start(3) - 1
        end = m.end(3) + 1
        raw = m.group(3).decode("utf-8", "replace")
        try:
            import json

            value = json.loads('"' + raw + '"')
        except ValueError:
            value = raw
        yield f"{m.group(1).decode()}@{start}", start, end, value


class MalformedURL(InputError):
    """A request URL that cannot be parsed: ``problem`` says why, without
    repeating the URL (it may hold a credential that could not be found)."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"malformed URL: {problem}")


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be parsed, redacted and written as UTF-8, in a few words
    that do not quote it (a bracketed host that is not an IP, unbalanced brackets,
    a port outside 0-65535, a lone surrogate); ``None`` when it can."""
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which is not UTF-8"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        text = str(exc)
        if "Invalid IPv6 URL" in text:
            return "unbalanced [ ] around the host"
        if "IPv4 or IPv6" in text:
            return "the host in [ ] is not an IP address"
        return "Python's urlsplit cannot parse it"
    try:
        _ = parts.port  # parsed on first access
    except ValueError:
        return "the port is not a number from 0 to 65535"
    return None


def redact_all(
    url: str,
    headers: Iterable[tuple[str, str]] | Mapping[str, str],
    body: bytes,
    redactor: Redactor | None = None,
    *,
    keep: Callable[[str], bool] | None = None,
) -> tuple[str, list[tuple[str, str]], bytes, Redaction]:
    """Redact one request: headers first (to learn the secrets), then the URL
    (learning ``?key=``), then the body; a second header pass scrubs secrets
    learned from the URL or body out of the headers."""
    r = redactor or Redactor()
    red = Redaction()
    hdrs, _ = r.headers(headers, red, keep=keep)
    safe_url = r.url(url, red)
    safe_body, _ = r.body(body, red)
    hdrs = [(k, r.scrub_text(v, red)) for k, v in hdrs]
    return safe_url, hdrs, safe_body, red


__all__ += ["redact_all", "SECRET_HEADERS", "SECRET_PARAMS", "SECRET_BODY_KEYS"]
