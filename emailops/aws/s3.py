"""Templates in ``S3_BUCKET`` (``default/{file}``, ``custom/O{org}/{file}``) through one boto3 client.

The console's drafts and version history live in the same bucket under ``_emailops/``, a prefix the
Go service and the consumer never read, so nothing kept there can change what is sent. Only
``publish_template`` writes a published key, and only conditionally (If-Match / If-None-Match).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.core.errors import ConcurrentUpdate, TemplateError
from emailops.core.template_cache import TemplateFetch

__all__ = ["INTERNAL_PREFIX", "PublishedObject", "S3TemplateStore", "object_version"]

INTERNAL_PREFIX = "_emailops/"
_MISSING_CODES = ("NoSuchKey", "404", "NotFound")  # what S3 answers for an absent key
VERSION_METADATA = (
    "emailops-version"  # x-amz-meta-emailops-version: our id on an unversioned bucket
)


def object_version(response: dict) -> str:
    """Which version of an object a GetObject/HeadObject/PutObject answer is about: the S3
    VersionId on a versioned bucket, else the id the console wrote into its metadata, else (a
    file uploaded some other way) its ETag without quotes."""
    version = response.get("VersionId")
    if version and version != "null":
        return version
    metadata = response.get("Metadata") or {}
    if metadata.get(VERSION_METADATA):
        return metadata[VERSION_METADATA]
    return (response.get("ETag") or "").strip('"')


@dataclass(frozen=True)
class PublishedObject:
    key: str
    data: bytes
    version: str
    etag: str  # with its quotes, as S3 gives it (what If-Match takes)
    modified: datetime | None = None  # S3's LastModified (PutObject's answer has none)

    @classmethod
    def from_response(cls, key: str, data: bytes, response: dict) -> PublishedObject:
        """The object a GetObject/HeadObject/PutObject answer describes."""
        modified = response.get("LastModified")
        return cls(
            key,
            data,
            object_version(response),
            response.get("ETag", ""),
            modified if isinstance(modified, datetime) else None,
        )


class S3TemplateStore:
    """One boto3 client shared by every thread (clients are thread-safe): a django-storages
    storage per thread cost ~5 MB of RSS each (its boto3 resource) and bought nothing here."""

    def __init__(self, bucket: str, *, client: Any) -> None:
        self.bucket = bucket
        self.client = client

    def read_template(self, key: str) -> str | None:
        return self.fetch_template(key).source

    def fetch_template(self, key: str, *, if_none_match: str | None = None) -> TemplateFetch:
        """The template and its ETag; with ``if_none_match``, a conditional GET whose 304 answer
        (not_modified) costs no download: how the consumer's cache revalidates."""
        # One GetObject: the consumer's hot path (a branded miss costs one call, not two).
        condition = {"IfNoneMatch": if_none_match} if if_none_match else {}
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key, **condition)
            data = response["Body"].read()
        except ClientError as exc:
            code = error_code(exc)
            if code in ("304", "NotModified") and if_none_match:
                return TemplateFetch(None, if_none_match, not_modified=True)
            if code in _MISSING_CODES:
                return TemplateFetch(None)
            raise translate_error(exc, "fetch template", key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "fetch template", key=key) from exc
        try:
            return TemplateFetch(
                data.decode("utf-8"), response.get("ETag"), version=object_version(response)
            )
        except UnicodeDecodeError as exc:
            raise TemplateError(
                "fetch template", key=key, reason=f"not UTF-8 text ({exc})"
            ) from None

    def write_template(self, key: str, source: str) -> None:
        content_type = mimetypes.guess_type(key)[0] or "application/octet-stream"
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=key, Body=source.encode("utf-8"), ContentType=content_type
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "upload template", key=key) from exc

    # --- the console's template lifecycle -------------------------------------------------------

    def read_object(self, key: str) -> PublishedObject | None:
        """An object's exact bytes and version (None if there is none)."""

        def read() -> PublishedObject:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            return PublishedObject.from_response(key, response["Body"].read(), response)

        return self._unless_missing(read, "read object", key)

    def head_object(self, key: str) -> PublishedObject | None:
        """An object's version and ETag without its bytes (``data`` is empty)."""
        return self._unless_missing(
            lambda: PublishedObject.from_response(
                key, b"", self.client.head_object(Bucket=self.bucket, Key=key)
            ),
            "look up object",
            key,
        )

    @staticmethod
    def _unless_missing(
        call: Callable[[], PublishedObject], what: str, key: str
    ) -> PublishedObject | None:
        """``call()``, or None when S3 has no such object; other S3 errors as core errors."""
        try:
            return call()
        except ClientError as exc:
            if error_code(exc) in _MISSING_CODES:
                return None
            raise translate_error(exc, what, key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, what, key=key) from exc

    def publish_template(
        self, key: str, data: bytes, *, version_id: str, replacing: PublishedObject | None
    ) -> PublishedObject:
        """Write a published key only if it still holds ``replacing`` (If-Match on its ETag), or
        is still absent when ``replacing`` is None (If-None-Match: *). Someone else's write in
        between raises ConcurrentUpdate: never a silent overwrite. Returns what was written."""
        if key.startswith(INTERNAL_PREFIX):
            raise ValueError(f"{key} is not a published template key")
        condition = {"IfMatch": replacing.etag} if replacing else {"IfNoneMatch": "*"}
        try:
            response = self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="text/html; charset=utf-8",
                Metadata={VERSION_METADATA: version_id},
                **condition,
            )
        except ClientError as exc:
            if error_code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                raise ConcurrentUpdate(
                    "publish template", key=key, reason="the published file changed meanwhile"
                ) from exc
            if error_code(exc) in ("NoSuchKey", "404") and replacing:
                raise ConcurrentUpdate(
                    "publish template", key=key, reason="the published file was deleted meanwhile"
                ) from exc
            raise translate_error(exc, "publish template", key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "publish template", key=key) from exc
        written = {**response, "Metadata": {VERSION_METADATA: version_id}}
        return PublishedObject.from_response(key, data, written)

    def write_internal(self, key: str, data: bytes) -> None:
        """Write a draft or history object; only under ``_emailops/``, never a published key."""
        if not key.startswith(INTERNAL_PREFIX):
            raise ValueError(f"{key} is not under {INTERNAL_PREFIX}")
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "write template history", key=key) from exc

    def read_internal(self, key: str) -> bytes | None:
        if not key.startswith(INTERNAL_PREFIX):
            raise ValueError(f"{key} is not under {INTERNAL_PREFIX}")
        found = self.read_object(key)
        return found.data if found else None

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        """Every object key under ``prefix`` (one paginated listing, not a call per folder)."""
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"]
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "list templates", key=prefix) from exc

    def create_bucket(self) -> None:
        """Create the bucket if it does not exist (``bootstrap_aws``)."""
        client = self.client
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
