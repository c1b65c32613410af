"""Keep secrets off disk: everything the recorder writes passes through `scrub`."""

from __future__ import annotations

import os
import re

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AKA_API_KEY")
# Anthropic keys (sk-ant-…) and generic bearer tokens in headers.
_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(x-api-key|authorization)(\"?\s*[:=]\s*\"?)(bearer\s+)?[A-Za-z0-9_\-\.]{8,}"),
)
REDACTED = "[REDACTED]"


def scrub(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """Replace API keys (by pattern, and the values of the secret environment variables) with [REDACTED]."""
    secrets = [os.environ.get(name, "") for name in SECRET_ENV_VARS] + list(extra_secrets)
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = text.replace(secret, REDACTED)
    text = _PATTERNS[0].sub(REDACTED, text)
    return _PATTERNS[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
