"""Translate boto3/botocore failures and EC2 error codes into Burster's error tree.

Every message names the operation, the AWS error code and what to do next. Messages pass through
:func:`scrub` so no key id, signature, token or pre-signed URL ever reaches a log or an exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from burster.errors import (
    AuthError,
    CapacityError,
    NotFoundError,
    ProviderError,
    QuotaError,
    ThrottledError,
    TransientError,
)
from burster.retry import call_with_backoff

T = TypeVar("T")
PROVIDER = "aws"
MAX_MESSAGE_CHARS = 300

CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "InsufficientCapacityOnHost", "SpotMaxPriceTooLow",
    "UnfulfillableCapacity", "CapacityNotAvailable",
})
QUOTA_CODES = frozenset({
    "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "InstanceLimitExceeded",
    "MaxSpotFleetRequestCountExceeded", "MaxFleetCountExceeded", "TargetCapacityLimitExceededException",
    "InsufficientFreeAddressesInSubnet", "AddressLimitExceeded", "ResourceLimitExceeded",
    "MaxIOPSLimitExceeded", "VolumeLimitExceeded", "LaunchTemplateVersionLimitExceeded",
})
THROTTLE_CODES = frozenset({
    "RequestLimitExceeded", "Throttling", "ThrottlingException", "RequestThrottled",
    "RequestThrottledException", "SlowDown", "TooManyRequestsException", "EC2ThrottledException",
})
AUTH_CODES = frozenset({
    "UnauthorizedOperation", "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
    "ExpiredToken", "ExpiredTokenException", "RequestExpired", "AccessDenied", "AccessDeniedException",
    "OptInRequired", "UnrecognizedClientException", "MissingAuthenticationToken", "IncompleteSignature",
    "InvalidAccessKeyId", "PendingVerification", "Blocked", "AWS.SimpleQueueService.AccessDenied",
    "KMS.AccessDeniedException",
})
NOT_FOUND_CODES = frozenset({
    "InvalidInstanceID.NotFound", "InvalidLaunchTemplateId.NotFound", "InvalidLaunchTemplateId.Malformed",
    "InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.VersionNotFound",
    "InvalidSubnetID.NotFound", "InvalidAMIID.NotFound", "InvalidAMIID.Unavailable",
    "InvalidGroup.NotFound", "InvalidInstanceType", "Unsupported",
    "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NotFoundException",
})
TRANSIENT_CODES = frozenset({
    "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "ServiceUnavailableException",
    "InternalServerError", "InternalErrorException",
})

_ADVICE: dict[type[ProviderError], str] = {
    CapacityError: "EC2 has no capacity for this offering now; it is blocked for a while, so the "
                   "next pass tries another zone, instance type or market",
    QuotaError: "an account limit stops the launch; raise it in Service Quotas (e.g. 'All G and VT "
                "Spot Instance Requests' or the P/G on-demand vCPU quota) or lower guards.max_nodes",
    ThrottledError: "the EC2 API is rate limiting this account; retried with backoff, lower the "
                    "controller tick rate if it persists",
    AuthError: "the credentials lack a permission or have expired; compare the role's policy with "
               "docs/providers/aws.md (terraform/modules/aws/iam.tf)",
    NotFoundError: "check clouds.aws (launch_template_ids, subnet_ids, interruption_queue_url, "
                   "regions) against what exists in the account",
    TransientError: "an AWS-side or network failure; retried with backoff",
    ProviderError: "the request was rejected; check the launch template and clouds.aws settings",
}

NO_CREDENTIALS = (
    "aws: no AWS credentials found. Looked for: the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "(optionally AWS_SESSION_TOKEN) environment variables; the shared credentials file "
    "~/.aws/credentials and config file ~/.aws/config (profile {profile}, or AWS_SHARED_CREDENTIALS_FILE "
    "/ AWS_CONFIG_FILE); a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN); "
    "container credentials (ECS/EKS); and the EC2 instance role (instance metadata). Configure one of "
    "them, e.g. run `aws configure` or attach the controller role from terraform/modules/aws."
)

_SECRETS = [
    (re.compile(r"https?://\S*[?&](X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|Signature)=\S*",
                re.IGNORECASE), "[signed URL redacted]"),
    (re.compile(r"(X-Amz-Signature|X-Amz-Security-Token|X-Amz-Credential|Signature|Credential|"
                r"aws_secret_access_key|aws_session_token|SecretAccessKey|SessionToken)"
                r"(\s*[=:]\s*)[^\s,;&\"']+", re.IGNORECASE), r"\1\2[redacted]"),
    (re.compile(r"\b(AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}\b"), "[key id redacted]"),
    (re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"), "[secret redacted]"),
]


def scrub(text: str) -> str:
    """Remove anything that looks like a credential, signature or signed URL; cap the length."""
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def class_for_code(code: str, http_status: int | None = None) -> type[ProviderError]:
    """The Burster error class for an AWS error code (``Server.``/``Client.`` prefixes ignored)."""
    bare = code.split(".", 1)[1] if code.startswith(("Server.", "Client.")) else code
    for codes, cls in ((CAPACITY_CODES, CapacityError), (QUOTA_CODES, QuotaError),
                       (THROTTLE_CODES, ThrottledError), (AUTH_CODES, AuthError),
                       (NOT_FOUND_CODES, NotFoundError), (TRANSIENT_CODES, TransientError)):
        if bare in codes:
            return cls
    if bare.endswith(".NotFound") or bare.endswith("NotFoundException"):
        return NotFoundError
    if http_status is not None and http_status >= 500:
        return TransientError
    if http_status == 429:
        return ThrottledError
    return ProviderError


def error_for_code(code: str, message: str, *, op: str, offering_key: str = "",
                   http_status: int | None = None) -> ProviderError:
    """Build the Burster error for one AWS error code and message."""
    if code == "IdempotentParameterMismatch":
        return ProviderError(
            f"aws {op}: {code}: the request id was already used for a different launch; plans must "
            f"derive a new request id when the launch changes", provider=PROVIDER, offering_key=offering_key)
    cls = class_for_code(code, http_status)
    where = f"{op} of {offering_key}" if offering_key else op
    return cls(f"aws {where}: {_sentence(code, message)} {_ADVICE[cls]}", provider=PROVIDER,
               offering_key=offering_key)


def _sentence(code: str, message: str) -> str:
    """``code: message.`` with one final period (AWS's messages often end in one), or ``code.``."""
    text = f"{code}: {scrub(message)}" if message.strip() else code
    return text if text.endswith((".", "!", "?")) else f"{text}."


def no_credentials(profile: str | None) -> AuthError:
    """The one message for missing credentials; names every place boto3 looks."""
    return AuthError(NO_CREDENTIALS.format(profile=repr(profile or "default")), provider=PROVIDER)


def translate(exc: BaseException, *, op: str, offering_key: str = "",
              profile: str | None = None) -> ProviderError | None:
    """The Burster error for a boto3/botocore exception, or None when it is not an AWS failure."""
    from botocore import exceptions as bx
    from botocore.parsers import ResponseParserError  # not in botocore.exceptions

    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, bx.ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return error_for_code(str(err.get("Code", "Unknown")), str(err.get("Message", "")), op=op,
                              offering_key=offering_key, http_status=status)
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError | bx.CredentialRetrievalError):
        return no_credentials(profile)
    if isinstance(exc, bx.ConnectionError | bx.HTTPClientError | ResponseParserError):  # TLS and proxies too
        return TransientError(
            f"aws {op}: cannot reach the AWS endpoint ({type(exc).__name__}); retried with backoff, "
            f"check network access and clouds.aws.endpoint_url", provider=PROVIDER, offering_key=offering_key)
    if isinstance(exc, bx.SSOError | bx.TokenRetrievalError):
        return AuthError(f"aws {op}: the AWS SSO session has expired or cannot be refreshed "
                         f"({type(exc).__name__}); run `aws sso login` for the profile, or give the "
                         f"controller other credentials", provider=PROVIDER, offering_key=offering_key)
    if isinstance(exc, bx.BotoCoreError):  # any other SDK failure: reported, never a crash of the pass
        return ProviderError(f"aws {op}: {_sentence(type(exc).__name__, str(exc))} {_ADVICE[ProviderError]}",
                             provider=PROVIDER, offering_key=offering_key)
    return None


class Caller:
    """Runs SDK calls with error translation and Burster's backoff (the SDK's own retries are off)."""

    def __init__(self, sleep: Callable[[float], None], *, attempts: int = 5, base_s: float = 0.2,
                 profile: str | None = None) -> None:
        self.sleep = sleep
        self.attempts = attempts
        self.base_s = base_s
        self.profile = profile

    def __call__(self, op: str, fn: Callable[[], T], *, offering_key: str = "") -> T:
        def once() -> T:
            try:
                return fn()
            except Exception as exc:
                mapped = translate(exc, op=op, offering_key=offering_key, profile=self.profile)
                if mapped is None:
                    raise
                if mapped is exc:
                    raise
                raise mapped from None

        return call_with_backoff(once, attempts=self.attempts, base_s=self.base_s, sleep=self.sleep)
