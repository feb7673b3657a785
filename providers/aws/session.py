"""boto3 session and clients: credential check, known regions, SDK retries off (Burster backs off)."""

from __future__ import annotations

import os
from typing import Any

from burster.errors import AuthError
from providers.aws.errors import PROVIDER, no_credentials


def make_session() -> Any:
    """A boto3 Session using the SDK's usual credential chain."""
    import boto3
    from botocore import exceptions as bx

    try:
        return boto3.session.Session()
    except bx.ProfileNotFound:  # boto3 reads AWS_PROFILE's profile as it starts
        raise _no_profile() from None


def _no_profile() -> AuthError:
    return AuthError(f"aws: the AWS profile {os.environ.get('AWS_PROFILE')!r} (AWS_PROFILE) is not in "
                     f"~/.aws/config or ~/.aws/credentials; fix AWS_PROFILE or add the profile",
                     provider=PROVIDER)


def profile_of(session: Any) -> str | None:
    """The session's profile name (boto3 says 'default' when none is set), for error messages."""
    name = getattr(session, "profile_name", None)
    return name if isinstance(name, str) else None


def check_credentials(session: Any) -> None:
    """Raise AuthError naming every place boto3 looked when no credentials are found."""
    from botocore import exceptions as bx

    profile = os.environ.get("AWS_PROFILE") or None
    try:
        creds = session.get_credentials()
    except bx.ProfileNotFound:
        raise _no_profile() from None
    except (bx.CredentialRetrievalError, bx.PartialCredentialsError, bx.NoCredentialsError):
        raise no_credentials(profile) from None
    if creds is None:
        raise no_credentials(profile)


def known_regions(session: Any) -> set[str]:
    """Every EC2 region botocore knows, in all partitions."""
    regions: set[str] = set()
    for partition in session.get_available_partitions():
        regions.update(session.get_available_regions("ec2", partition_name=partition))
    return regions


def client(session: Any, service: str, region: str, endpoint_url: str = "") -> Any:
    """An SDK client with its own retries off: Burster's call_with_backoff does the retrying."""
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=5,
                    read_timeout=30, user_agent_extra="burster")
    return session.client(service, region_name=region, endpoint_url=endpoint_url or None, config=config)
