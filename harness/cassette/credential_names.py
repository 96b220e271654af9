"""Names that say their value is a credential: a query parameter's, a JSON or form field's, a `name=value` in text.

One list for the recorder, the proxy, the importer, replay's live redaction and `harness scan`, decided by the
name's last word rather than by a list of exact names, since every service spells its own: `subscription-key`,
`private_token`, `SecretAccessKey`, `clientSecret`, `x-amz-signature`, `passwd`.

- a name whose last word is `token`, `secret`, `password`, `passwd`, `pwd`, `passphrase`, `credential(s)`,
  `apikey`, or `key` after another word (`api_key`, `subscription-key`, `SecretAccessKey`), is a credential's,
  unless the word before says it is not (`page_token` is a cursor the SDK sends back, `public_key`,
  `cache_key`, `idempotency_key`, `sort_key`);
- `key`, `sig`, `signature`, `auth` and `pass` alone are a credential's only as a query or form parameter
  (`?key=`, `&sig=`, `&pass=`): in a JSON body they are other things (a thinking block's `signature`, a
  computer-use tool's `key` config, a vault credential's `auth` object);
- a count is never one: `max_tokens`, `input_tokens`, `tokens` end in another word.
"""

from __future__ import annotations

import functools
import re

# The last word of a credential's name.
_SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "passphrase", "credential", "credentials", "apikey"}
)
# Names run together (`accesstoken`, `clientsecret`): ends with one of these.
_JOINED_SUFFIXES = ("token", "secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey",
                    "accesskey", "secretkey", "privatekey")
# Words that, before the last one, make it something else than a credential.
_NOT_SECRET_QUALIFIERS = frozenset(
    {
        "page", "next", "prev", "previous", "continuation", "pagination", "cursor", "resume", "sync",
        "public", "cache", "idempotency", "dedup", "dedupe", "sort", "partition", "primary", "foreign", "hold",
        "lookup", "map", "dict", "row", "hash", "max", "min", "stop", "end", "start", "csrf", "xsrf",
    }
)
# Alone, these name a credential only in a query or a form (see the module's docstring).
QUERY_ONLY_NAMES = frozenset({"key", "sig", "signature", "auth", "pass"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> list[str]:
    """`SecretAccessKey`, `secret-access-key`, `secret_access_key` -> ["secret", "access", "key"]."""
    return [word for word in re.split(r"[_\-.\s]+", _CAMEL.sub("_", name).lower()) if word]


@functools.lru_cache(maxsize=4096)  # asked for every key of every body the recorder writes; names repeat
def is_credential_name(name: str, *, in_query: bool = False) -> bool:
    """Whether `name` says its value is a credential; `in_query`: a query or form parameter, where `key`,
    `sig`, `signature` and `auth` alone count too."""
    words = name_words(name)
    if not words:
        return False
    if len(words) == 1 and words[0] in QUERY_ONLY_NAMES:
        return in_query
    last = words[-1]
    if len(words) > 1 and words[-2] in _NOT_SECRET_QUALIFIERS:
        return False
    if last in _SECRET_WORDS or (last == "key" and len(words) > 1):
        return True
    if last in QUERY_ONLY_NAMES:  # `x-amz-signature`, `token_endpoint_auth`
        return in_query
    return len(words) == 1 and last.endswith(_JOINED_SUFFIXES)


# A value a credential name holds that is a credential: one word (no space: "correct horse battery staple"
# is a sentence), at least 8 characters (6 for a password: `hunter2`), with a digit (so an argument such as
# "radiance" or a stand-in such as "YOUR_API_KEY" is not), and not one of our placeholders.
_CREDENTIAL_VALUE = re.compile(r"(?!<redacted:)(?=[^\s]*\d)[^\s]{8,}")
_PASSWORD_VALUE = re.compile(r"(?!<redacted:)(?=[^\s]*\d)[^\s]{6,}")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "pass"})


def is_credential_value(value: str, name: str = "") -> bool:
    """Whether `value`, held by a credential's `name`, looks like a credential (a password may be shorter)."""
    words = name_words(name) if name else []
    shape = _PASSWORD_VALUE if words and words[-1] in _PASSWORD_WORDS else _CREDENTIAL_VALUE
    return shape.fullmatch(value) is not None
