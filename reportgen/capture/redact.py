"""Credential redaction for everything capture writes (execute+capture stage).

Two layers, both applied before a byte reaches runs/:

1. By name: an environment variable whose name looks like a credential has its value replaced
   by ``<redacted>`` (`redact_env`). The rule is deliberately broad: a false positive costs a
   line of provenance, a false negative leaks a token into a published report.
2. By value: the values of those variables (and passwords embedded in URLs) are replaced
   wherever they appear in free text (`redact_text`): a command line, a git diff, pip freeze
   output, nvidia-smi output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"

# Substrings of a variable name (upper-cased) that mark it as a credential.
SECRET_NAME_PARTS = (
    "TOKEN",
    "KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
    "SESSION",
    "SIGNATURE",
    "CERT",
)
# Names that hold credentials without saying so.
SECRET_NAMES = frozenset(
    {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "WANDB_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "CLEARML_API_ACCESS_KEY",
        "CLEARML_API_SECRET_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MYSQL_PWD",
        "PGPASSWORD",
        "SENTRY_DSN",
        "DATABASE_URL",
        "REDIS_URL",
        "NGC_API_KEY",
        "DOCKER_AUTH_CONFIG",
        "NETRC",
        "KAGGLE_KEY",
    }
)
SECRET_PREFIXES = ("CLEARML_API_", "WANDB_API", "AWS_SECRET", "AZURE_CLIENT_SECRET")
# Names that match a part above but are known to hold no secret and matter for a run's
# behaviour (kept so the provenance stays useful). Exact names only.
NOT_SECRET_NAMES = frozenset({"TOKENIZERS_PARALLELISM"})

# Values shorter than this are not searched for in free text: "1" or "true" would erase half
# the output. Their variables are still redacted by name.
MIN_SECRET_LEN = 6

# scheme://user:password@host -> the password part.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@/]+)(?=@)")
# scheme://token@host (a bare token as user, as in https://ghp_xxx@github.com).
_URL_TOKEN_USER = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[A-Za-z0-9_\-]{20,})(?=@)")


def is_secret_name(name: str) -> bool:
    """True when an environment variable of this name may hold a credential."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    if upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES):
        return True
    if upper.startswith("AWS_") and "KEY" in upper:
        return True
    return any(part in upper for part in SECRET_NAME_PARTS)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env with credential-named values replaced, and those values (and URL
    passwords) masked inside every other value, e.g. a JSON runtime env that embeds a token."""
    secrets = secret_values(env)
    out: dict[str, str] = {}
    for name, value in env.items():
        out[name] = REDACTED if is_secret_name(name) else redact_text(str(value), secrets)
    return out


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values to scrub from free text: credential-named values and URL passwords, longest first."""
    found: set[str] = set()
    for name, value in env.items():
        value = str(value)
        if is_secret_name(name) and len(value) >= MIN_SECRET_LEN:
            found.add(value)
        for m in _URL_PASSWORD.finditer(value):
            if len(m.group("pw")) >= MIN_SECRET_LEN:
                found.add(m.group("pw"))
    # Longest first so a secret that contains another is replaced whole.
    return sorted(found, key=lambda s: (-len(s), s))


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every literal occurrence of each secret (len >= 6) and every URL password."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=lambda s: (-len(s), s)):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _redact_urls(text)


def redact_obj(obj: Any, secrets: Iterable[str]) -> Any:
    """redact_text applied to every string (keys included) of a JSON-like structure."""
    secrets = list(secrets)
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, Mapping):
        return {redact_obj(k, secrets) if isinstance(k, str) else k: redact_obj(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v, secrets) for v in obj]
    return obj


def _redact_urls(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, text)
    return _URL_TOKEN_USER.sub(lambda m: m.group("head") + REDACTED, text)
