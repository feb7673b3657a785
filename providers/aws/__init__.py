"""AWS adapter: EC2 CreateFleet (instant) launches, tag-scoped listing, SQS interruptions, live prices.

Importing this package does not import boto3; the SDK is loaded when the adapter is built.
"""

from providers.aws.adapter import AwsProvider, from_config

__all__ = ["AwsProvider", "from_config"]
