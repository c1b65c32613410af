"""Keep secrets out of everything aka writes or prints: `scrub` replaces them, plain or encoded.

The secrets are the values of credential-like environment variables (names with KEY, TOKEN, SECRET,
PASSWORD, CREDENTIAL or AUTH) of this process, plus anything matching the shape of an Anthropic key or an
authorization header. Each value is also searched for in the forms a program would use to smuggle it
out: base64 (standard and URL-safe, at each of the three byte alignments, so a key inside a longer encoded
blob is found too), base32, hexadecimal, percent-encoded and reversed.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import urllib.parse

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AKA_API_KEY")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_SECRET = 8  # shorter values (flags like "1") are not worth hiding and would mangle ordinary text
_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(x-api-key|authorization)(\"?\s*[:=]\s*\"?)(bearer\s+)?[A-Za-z0-9_\-\.]{8,}"),
)
REDACTED = "[REDACTED]"


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The values to hide: credential-like environment variables of this process."""
    env = os.environ if environ is None else environ
    names = {n for n in env if SECRET_NAME.search(n)} | set(SECRET_ENV_VARS)
    return sorted({env.get(n, "") for n in names if len(env.get(n, "")) >= MIN_SECRET}, key=len, reverse=True)


def _b64_cores(secret: bytes, alphabet: bytes = b"+/") -> list[str]:
    """The base64 characters that depend only on `secret`, for each alignment inside a longer stream."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret, altchars=alphabet).decode()
        start = -(-8 * offset // 6)  # first character whose bits all come from the secret
        end = (8 * (offset + len(secret))) // 6
        core = encoded[start:end]
        if len(core) >= MIN_SECRET:
            cores.append(core)
    return cores


@functools.lru_cache(maxsize=64)
def encoded_forms(secret: str) -> tuple[str, ...]:
    """`secret` and the encodings it could be written out in (longest first)."""
    raw = secret.encode()
    forms = {secret, secret[::-1], raw.hex(), raw.hex().upper(), urllib.parse.quote(secret, safe=""),
             base64.b32encode(raw).decode().rstrip("=")}
    forms.update(_b64_cores(raw))
    forms.update(_b64_cores(raw, b"-_"))
    return tuple(sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True))


def scrub(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """Replace secrets (plain and encoded), Anthropic keys and authorization headers with [REDACTED]."""
    for secret in [*secret_values(), *extra_secrets]:
        if len(secret) < MIN_SECRET:
            continue
        for form in encoded_forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    text = _PATTERNS[0].sub(REDACTED, text)
    return _PATTERNS[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def contains_secret(text: str, secrets: list[str] | None = None) -> bool:
    """Whether `text` holds any secret in any of its encoded forms."""
    return any(form in text for s in (secrets if secrets is not None else secret_values())
               for form in encoded_forms(s))
