"""In-memory fakes of the outside world, for tests: behave like the real thing, with fault knobs."""

from providers.fake.cloud import FakeCloudProvider

__all__ = ["FakeCloudProvider"]
