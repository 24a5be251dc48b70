"""Templates in ``S3_BUCKET`` (``default/{file}``, ``custom/O{org}/{file}``) through django-storages."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.base import ContentFile
from storages.backends.s3 import S3Storage

from emailops.aws.clients import error_code, translate_error
from emailops.core.errors import TemplateError
from emailops.core.template_cache import TemplateFetch

__all__ = ["S3TemplateStore"]


class S3TemplateStore:
    def __init__(self, bucket: str, *, region: str | None = None) -> None:
        self.bucket = bucket
        self._local = threading.local()  # django-storages' boto3 resource is not thread-safe
        self._region = region

    @property
    def storage(self) -> S3Storage:
        storage = getattr(self._local, "storage", None)
        if storage is None:
            storage = S3Storage(
                bucket_name=self.bucket,
                region_name=self._region,
                file_overwrite=True,
                default_acl=None,
                querystring_auth=False,
            )
            self._local.storage = storage
        return storage

    def read_template(self, key: str) -> str | None:
        return self.fetch_template(key).source

    def fetch_template(self, key: str, *, if_none_match: str | None = None) -> TemplateFetch:
        """The template and its ETag; with ``if_none_match``, a conditional GET whose 304 answer
        (not_modified) costs no download: how the consumer's cache revalidates."""
        # One GetObject through the storage's client: Storage.open() would add a HeadObject per
        # read, and this is the consumer's hot path (a branded miss costs one call, not two).
        client = self.storage.connection.meta.client
        condition = {"IfNoneMatch": if_none_match} if if_none_match else {}
        try:
            response = client.get_object(Bucket=self.bucket, Key=key, **condition)
            data = response["Body"].read()
        except ClientError as exc:
            code = error_code(exc)
            if code in ("304", "NotModified") and if_none_match:
                return TemplateFetch(None, if_none_match, not_modified=True)
            if code in ("NoSuchKey", "404", "NotFound"):
                return TemplateFetch(None)
            raise translate_error(exc, "fetch template", key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "fetch template", key=key) from exc
        try:
            return TemplateFetch(data.decode("utf-8"), response.get("ETag"))
        except UnicodeDecodeError as exc:
            raise TemplateError(
                "fetch template", key=key, reason=f"not UTF-8 text ({exc})"
            ) from None

    def write_template(self, key: str, source: str) -> None:
        try:
            self.storage.save(key, ContentFile(source.encode("utf-8")))
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "upload template", key=key) from exc

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        """Every object key under ``prefix`` (one paginated listing, not a call per folder)."""
        try:
            for obj in self.storage.bucket.objects.filter(Prefix=prefix):
                yield obj.key
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "list templates", key=prefix) from exc

    def create_bucket(self) -> None:
        """Create the bucket if it does not exist (``bootstrap_aws``)."""
        client = self.storage.connection.meta.client
        try:
            client.head_bucket(Bucket=self.bucket)
            return
        except ClientError:
            pass
        region = client.meta.region_name
        kwargs = (
            {}
            if region in (None, "us-east-1")
            else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        )
        try:
            client.create_bucket(Bucket=self.bucket, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "create bucket", key=self.bucket) from exc
