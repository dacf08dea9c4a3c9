"""Secrets kept out of everything evalh writes or shows: URLs keep their host and path but
lose credentials (user:password and secret-looking query parameters are replaced by a
marker), JSON templates lose the literal values of credential-looking keys, and, as a last
line of defence, `scrub_secrets` removes secret values from any text about to be persisted
or shown. The config snapshot (`evalh.snapshot`) is built on it.

Which values are secrets (docs/providers.md, "Secrets", states the same rule):

* the value of an environment variable whose name is a credential's (`is_credential_name`:
  `*_API_KEY`, `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_PASSWD`, `*_PWD`,
  `*_PASSPHRASE`, `*_CREDENTIALS`, and the same words as a whole part of the name);
* every credential evalh itself sends (`register_secret`): model keys, whatever the
  variable's name, HTTP target header values, `${VAR}` values in a body, the user, password
  and `Authorization: Basic` value of a `user:pass@` URL, credential query values;
* by construction, every credential-shaped value of the config, registered when it is
  loaded, before the first call (`register_config_secrets`): the value of every `${VAR}` it
  names and of every `api_key_env`, the userinfo and credential query values of every
  `url`, every query value of a model's `base_url` (a gateway's key), every header value,
  the literal value of a credential-named key in a JSON body template (`"api_key":
  "literal-…"`), and a string under a credential-named key of any table (`params`,
  generator and judge settings);

and, of those, only a value that could not be ordinary text: 8 characters or more, not a
word (letters only, lower case, Title case or UPPER case), not a file-system path
(`/…` whose first directory exists, `~/…`, `./…`, `../…`, `C:\…`). `$PWD`,
`$SSH_AUTH_SOCK` or a `*_MODE` setting are never secrets.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

REDACTED = "[REDACTED]"
# Names of environment variables (upper-cased) that hold credentials. Not `auth`, `sig`,
# `session` or a bare `PWD`: SSH_AUTH_SOCK, XDG_SESSION_ID and PWD hold paths and ids.
_CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET(?:_?KEY)?|TOKEN|PASSWORD|PASSWD"
    r"|PASSPHRASE|CREDENTIALS?)(?:_|$)|PASSWORD|(?:^|_)KEY$|_PWD$"
)
# Query parameters of a URL that carry a credential (`?token=`, `?api_key=`, `?sig=`).
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|credential|auth|sig|session", re.I)
# Keys of free-form tables that name a credential ("max_tokens" is a setting, "token" is not).
_SECRET_KEY = re.compile(
    r"api[_-]?key|^key$|secret|passw|pwd|credential|auth|signature|session|(^|[_-])token$", re.I
)
# `"key": value` in a JSON template (an HTTP target's body): a credential-looking key's
# literal value, string or number, is redacted; a `${VAR}` reference is kept (it names a
# secret, it does not hold one). Stricter than _SECRET_KEY: "author" is not "auth".
_JSON_PAIR = re.compile(r'"([^"\\]{1,64})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)')
_CREDENTIAL_KEY = re.compile(
    r"api[_-]?key|secret|passw|pwd|credential|private[_-]?key|access[_-]?key|signature"
    r"|(^|[_-])(auth|authorization|key|token|session)$|(?<=[a-z])(Key|Token|Secret|Password)$",
)
# A key of evalh.toml whose string value is a credential (in `params`, a judge's or a
# generator's table): stricter than _CREDENTIAL_KEY, since evalh's own settings end in
# `_key` too (`verdict_key`, `text_key` name fields, not credentials).
_CONFIG_CREDENTIAL_KEY = re.compile(
    r"api[_-]?key|apiKey|secret|passw|pwd|credential|private[_-]?key|access[_-]?key|signature"
    r"|^(key|token|auth|authorization|session)$|[_-](token|auth|authorization)$",
    re.I,
)
_ENV_REF_ONLY = re.compile(r'"\$\{[A-Za-z_][A-Za-z0-9_]*\}"')
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_URL_IN_TEXT = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.I)


def redact_url(url: str, *, every_query: bool = False) -> str:
    """Drop credentials from a URL: userinfo and secret-looking query values (with
    `every_query`, every query value: a model's `base_url`)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, REDACTED if every_query or _SECRET_NAME.search(k) else v) for k, v in pairs], safe="[]"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _is_credential_key(key: str) -> bool:
    """A key that names a credential (`api_key`, `token`, `apiKey`; not `author`, `max_tokens`)."""
    return bool(_CREDENTIAL_KEY.search(key) or _CREDENTIAL_KEY.search(key.lower()))


def redact_json_text(text: str) -> str:
    """A JSON template with the literal values of credential-looking keys redacted."""

    def pair(m: re.Match[str]) -> str:
        key, sep, value = m.groups()
        if _is_credential_key(key) and not _ENV_REF_ONLY.fullmatch(value):
            return f'"{key}"{sep}"{REDACTED}"'
        return m.group(0)

    return _JSON_PAIR.sub(pair, text)


_REGISTERED: set[str] = set()
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def is_credential_name(name: str) -> bool:
    """Whether an environment variable of this name holds a credential (see the module doc)."""
    return _CREDENTIAL_NAME.search(name.upper()) is not None


def register_secret(value: str | None) -> None:
    """Name a secret this process holds or sends that is not in a credential-named
    environment variable (a header value written in evalh.toml, a key read through a plainly
    named variable, a URL's password), so it is scrubbed too. Values that are not secret
    material (see `_looks_secret`) are ignored: "passed" or "eval" would corrupt the document."""
    if value and _looks_secret(value, 8):
        _REGISTERED.add(value)


def register_url_secrets(url: str, *, every_query: bool = False) -> None:
    """Register the credentials a URL makes a client send: the user and password of
    `user:pass@` (decoded and as written), the `Authorization: Basic` value derived from
    them, and the values of credential-looking query parameters (decoded and as written);
    with `every_query`, of every query parameter (a model's `base_url` has a query only to
    carry a gateway's credential, whatever its name)."""
    import base64
    from urllib.parse import unquote

    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        user, _, password = userinfo.partition(":")
        for raw in (user, password):
            register_secret(raw)
            register_secret(unquote(raw))
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        register_secret(base64.b64encode(basic).decode())
    for chunk in parts.query.split("&") if parts.query else []:
        name, _, raw = chunk.partition("=")
        if every_query or _SECRET_NAME.search(unquote(name)):
            register_secret(raw)
            register_secret(unquote(raw.replace("+", " ")))


def credential_literals(template: str) -> list[str]:
    """The literal values of credential-named keys in a JSON template (an HTTP target's
    body): `"api_key": "literal-…"` gives `literal-…` (JSON-decoded), `"token": 12345678901`
    its digits; a `${VAR}` reference is not a literal (its variable's value is registered)."""
    found: list[str] = []
    for m in _JSON_PAIR.finditer(template):
        key, _, value = m.groups()
        if not _is_credential_key(key):
            continue
        if _ENV_REF_ONLY.fullmatch(value):
            continue
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        found.append(str(decoded))
        if isinstance(decoded, str) and " " in decoded:  # "Bearer abc…": the token alone too
            found.append(decoded.split(" ", 1)[1])
    return found


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expanded(text: str) -> str:
    return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), text)


def register_config_secrets(tree: Any) -> None:
    """Register every credential-shaped value of a config as read (a TOML tree), before any
    call is made with it: see the module doc. Called by `evalh.config.load_config`, so
    every command that reads evalh.toml scrubs what that file makes evalh send."""

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if str(k) == "headers" and isinstance(v, dict):
                    for value in v.values():
                        if isinstance(value, str):
                            full = _expanded(value)
                            register_secret(full)
                            register_secret(full.split(" ", 1)[-1])  # "Bearer …": the token
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            for name in _ENV_REF.findall(node):
                register_secret(os.environ.get(name))
            if key == "api_key_env":
                register_secret(os.environ.get(node))
            elif key == "base_url":
                register_url_secrets(_expanded(node), every_query=True)
            elif _URL.match(node):
                register_url_secrets(_expanded(node))
            elif key == "body":
                for literal in credential_literals(node):
                    register_secret(literal)
            elif _CONFIG_CREDENTIAL_KEY.search(key):
                register_secret(_expanded(node))

    walk(tree, "")


def _is_path(value: str) -> bool:
    if value.startswith(("~/", "./", "../")) or _DRIVE.match(value):
        return True
    if value.startswith("/"):
        first = value[1:].split("/", 1)[0]
        return not first or os.path.lexists("/" + first)
    return False


def _looks_secret(value: str, min_len: int) -> bool:
    """A value that could be a credential: long enough, not a word, not a path. A plain
    word ("complete", "Disabled") in a variable named *_TOKEN_MODE is a setting, and a path
    ($PWD) is where the project lives: replacing either would corrupt exact text."""
    if len(value) < min_len:
        return False
    if value.isalpha() and (value.islower() or value.isupper() or value.istitle()):
        return False
    return not _is_path(value)


def secret_env_values(min_len: int = 8) -> list[str]:
    """Secrets to scrub: values of credential-named environment variables and every value
    given to `register_secret`; longest first."""
    found = {
        v for k, v in os.environ.items() if is_credential_name(k) and _looks_secret(v, min_len)
    }
    return sorted(found | _REGISTERED, key=len, reverse=True)


def _with_registered(env: list[str] | None) -> list[str]:
    """`env` (a precomputed `secret_env_values()`) with the secrets registered since."""
    if env is None:
        return secret_env_values()
    missing = _REGISTERED.difference(env)
    return env if not missing else sorted({*env, *missing}, key=len, reverse=True)


def scrub_secrets(
    data: bytes, extra: list[str] | None = None, *, env: list[str] | None = None
) -> bytes:
    """Replace every occurrence of a secret value (as it appears inside JSON) by the marker.

    `env` is a precomputed `secret_env_values()` (a journal writing thousands of lines reads
    the environment once); by default the environment is read on each call. Secrets
    registered after `env` was computed are scrubbed all the same.
    """
    for secret in [*(extra or []), *_with_registered(env)]:
        encoded = orjson.dumps(secret)[1:-1]
        if encoded and encoded in data:
            data = data.replace(encoded, REDACTED.encode())
    return data


def secret_forms(env: list[str] | None = None) -> list[bytes]:
    """Each secret as `scrub_secrets` looks for it (inside JSON): bytes that do not occur
    in data leave `scrub_secrets` nothing to replace."""
    return [f for f in (orjson.dumps(s)[1:-1] for s in _with_registered(env)) if f]


def _scrub_string(v: str, secrets: list[str]) -> tuple[str, list[list[int]]]:
    """`v` with every secret occurrence replaced by the marker, and the replaced regions in
    `v`'s own character offsets (`[start, end]`, in order): each became the marker."""
    cut: list[list[int]] = []
    out: list[str] = []
    i = 0
    while True:
        hits = [(v.find(s, i), s) for s in secrets]
        hits = [(at, s) for at, s in hits if at >= 0]
        if not hits:
            break
        at, secret = min(hits, key=lambda h: (h[0], -len(h[1])))  # leftmost, then longest
        out.append(v[i:at])
        out.append(REDACTED)
        cut.append([at, at + len(secret)])
        i = at + len(secret)
    if not cut:
        return v, []
    out.append(v[i:])
    return "".join(out), cut


def scrub_with_spans(value: Any, *, env: list[str] | None = None) -> tuple[Any, dict[str, list[list[int]]]]:
    """`scrub_value`, and where it cut: for each string it changed, by its dotted path in
    `value` (`""` for `value` itself, `text`, `items.0`), the regions replaced by the marker
    in the string's original offsets. Claims annotated as offsets into the original are
    mapped through these (`evalh.spans.through_scrub`), so their spans stay true."""
    secrets = _with_registered(env)
    cuts: dict[str, list[list[int]]] = {}
    if not secrets:
        return value, cuts

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, str):
            new, cut = _scrub_string(v, secrets)
            if cut:
                cuts[path] = cut
            return new
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                key = _scrub_string(k, secrets)[0] if isinstance(k, str) else k  # the path names no secret
                out[key] = walk(x, f"{path}.{key}" if path else str(key))
            return out
        if isinstance(v, list):
            return [walk(x, f"{path}.{i}" if path else str(i)) for i, x in enumerate(v)]
        return v

    return walk(value, ""), cuts
def scrub_file_bytes(data: bytes, *, env: list[str] | None = None) -> bytes:
    """`scrub_secrets` for a file of any format (a report in HTML or Markdown, JUnit XML, a
    dataset): each secret as it appears raw, JSON-escaped and HTML-escaped is replaced.
    Every file `evalh.atomic.atomic_write_bytes` writes goes through it."""
    import html

    for secret in _with_registered(env):
        for form in dict.fromkeys((secret, orjson.dumps(secret)[1:-1].decode(), html.escape(secret))):
            encoded = form.encode()
            if encoded and encoded in data:
                data = data.replace(encoded, REDACTED.encode())
    return data


def scrub_value(value: Any, *, env: list[str] | None = None) -> Any:
    """A JSON-like value with every secret inside its strings (and keys) replaced by the
    marker: what `scrub_secrets` would leave of it once stored, so a digest taken of the
    result is the digest of what the document holds."""
    return scrub_with_spans(value, env=env)[0]


def scrub_text(text: str, *, env: list[str] | None = None) -> str:
    """`scrub_secrets` for text shown on a terminal: CI keeps that output as a log."""
    for secret in _with_registered(env):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def is_secret_key(name: str) -> bool:
    """A free-form table's key that names a secret (`api_key`, `token`, `session`, ...)."""
    return bool(_SECRET_KEY.search(name))


def redact_urls(text: str) -> str:
    """`text` with the credentials of every URL in it redacted (a URL, or one inside prose)."""
    if _URL.match(text):
        return redact_url(text)
    if "://" in text:
        return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    return text
