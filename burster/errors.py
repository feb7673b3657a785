"""The one exception tree. Adapters translate SDK errors into these at their boundary.

Every message says what happened and what to do next; none carries a secret.
"""

from __future__ import annotations


class BursterError(Exception):
    """Base of every error Burster raises on purpose."""


class ConfigError(BursterError):
    """Configuration or command-line input is invalid; the message names the key and the fix."""


class InputError(BursterError):
    """A data file (trace, catalog) is malformed; the message names file, row and column."""


class IllegalTransitionError(BursterError):
    """A node lifecycle change that the lifecycle table forbids."""


class ProviderError(BursterError):
    """A cloud or pool API call failed. ``retryable`` says whether backing off may help."""

    retryable = False

    def __init__(self, message: str, *, provider: str = "", offering_key: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.offering_key = offering_key


class CapacityError(ProviderError):
    """The cloud has no capacity for this offering now; block it for a while and try another."""


class QuotaError(ProviderError):
    """An account quota or limit stops the request; raise the quota or lower max nodes."""


class ThrottledError(ProviderError):
    """The API asked us to slow down; retried with backoff, waiting at least ``retry_after_s`` when
    the API said how long (Retry-After)."""

    retryable = True
    retry_after_s: float | None = None


class InvalidRequestError(ProviderError):
    """The cloud refused the request as invalid (HTTP 400): sent again unchanged it fails again."""


class NotFoundError(ProviderError):
    """The resource (instance, region, type) does not exist."""


class AuthError(ProviderError):
    """Credentials are missing, expired or lack a permission."""


class TransientError(ProviderError):
    """A 5xx or network failure; retried with backoff."""

    retryable = True


class PartialLaunchError(ProviderError):
    """Some nodes of a launch came up and some did not; ``nodes`` holds the ones that did."""

    def __init__(self, message: str, *, nodes: tuple[object, ...], cause: ProviderError,
                 provider: str = "", offering_key: str = "") -> None:
        super().__init__(message, provider=provider, offering_key=offering_key)
        self.nodes = nodes
        self.cause = cause


class StoreError(BursterError):
    """The state store (``store.url``) cannot be opened, read or written."""


class BudgetExceededError(BursterError):
    """A launch would break a hard dollar budget."""
