"""S3TemplateStore against moto: read (None when absent), write, list, and bytes that are not text."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.s3 import S3TemplateStore
from emailops.core.errors import EmailOpsError, TemplateError

BUCKET = "emailops-templates"


@pytest.fixture
def store(aws) -> S3TemplateStore:
    return container.current().template_store


@pytest.fixture
def s3(store):
    return store.client  # the container's


def test_read_of_a_missing_template_is_none(store):
    assert store.read_template("default/nothing.html") is None
    assert store.read_template("custom/O367/nothing.html") is None


def test_write_then_read(store, s3):
    source = "<p>Hello {{.name}} — ünïcødé ✓</p>\n"
    store.write_template("default/welcome.html", source)
    assert store.read_template("default/welcome.html") == source
    # Stored under exactly that key, as UTF-8.
    body = s3.get_object(Bucket=BUCKET, Key="default/welcome.html")["Body"].read()
    assert body == source.encode("utf-8")


def test_write_overwrites_in_place(store, s3):
    store.write_template("default/welcome.html", "v1")
    store.write_template("default/welcome.html", "v2")
    assert store.read_template("default/welcome.html") == "v2"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert keys == ["default/welcome.html"]  # no renamed copy beside it


def test_list_keys(store):
    for key in [
        "default/b.html",
        "default/a.html",
        "custom/O367/a.html",
        "custom/O12/a.html",
        "default-other/x.html",
    ]:
        store.write_template(key, "x")
    assert sorted(store.list_keys()) == [
        "custom/O12/a.html",
        "custom/O367/a.html",
        "default-other/x.html",
        "default/a.html",
        "default/b.html",
    ]
    assert sorted(store.list_keys("default/")) == ["default/a.html", "default/b.html"]
    assert sorted(store.list_keys("custom/O367/")) == ["custom/O367/a.html"]
    assert list(store.list_keys("nothing/")) == []


def test_list_keys_pages_through_everything(store, s3):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    # More than one ListObjects page, put straight into moto's bucket: the listing is under
    # test, and 1005 PutObject calls through botocore took ~10 s.
    bucket = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for i in range(1005):
        bucket.put_object(BUCKET, f"default/t{i:04d}.html", b"x")
    keys = list(store.list_keys("default/"))
    assert len(keys) == 1005
    assert len(set(keys)) == 1005


def test_non_utf8_template_is_a_template_error(store, s3):
    s3.put_object(Bucket=BUCKET, Key="default/latin1.html", Body="<p>café</p>".encode("latin-1"))
    with pytest.raises(TemplateError) as info:
        store.read_template("default/latin1.html")
    assert info.value.key == "default/latin1.html"
    assert "UTF-8" in info.value.reason
    assert info.value.permanent


def test_empty_template_is_an_empty_string_not_none(store, s3):
    s3.put_object(Bucket=BUCKET, Key="default/empty.html", Body=b"")
    assert store.read_template("default/empty.html") == ""


def test_a_missing_bucket_is_an_error_not_a_missing_template(s3):
    store = S3TemplateStore("no-such-bucket", client=s3)
    with pytest.raises(EmailOpsError) as info:
        store.read_template("default/welcome.html")
    assert "NoSuchBucket" in info.value.reason
    assert not info.value.permanent


def test_create_bucket_is_idempotent(aws, s3):
    store = S3TemplateStore("fresh-bucket", client=s3)
    store.create_bucket()
    store.create_bucket()
    assert "fresh-bucket" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    store.write_template("default/x.html", "x")
    assert store.read_template("default/x.html") == "x"


# --- Conditional reads: how the consumer's cache revalidates a template ------------------------


def test_fetch_returns_the_source_and_its_etag(store, s3):
    store.write_template("default/welcome.html", "v1")
    fetched = store.fetch_template("default/welcome.html")
    assert fetched.source == "v1" and not fetched.not_modified
    assert fetched.etag == s3.head_object(Bucket=BUCKET, Key="default/welcome.html")["ETag"]


def test_an_unchanged_template_answers_not_modified(store):
    store.write_template("default/welcome.html", "v1")
    etag = store.fetch_template("default/welcome.html").etag
    again = store.fetch_template("default/welcome.html", if_none_match=etag)
    assert again.not_modified and again.source is None and again.etag == etag


def test_a_changed_template_is_sent_again_with_its_new_etag(store):
    store.write_template("default/welcome.html", "v1")
    etag = store.fetch_template("default/welcome.html").etag
    store.write_template("default/welcome.html", "v2")
    again = store.fetch_template("default/welcome.html", if_none_match=etag)
    assert not again.not_modified and again.source == "v2" and again.etag != etag


def test_a_conditional_fetch_of_a_deleted_template_is_a_miss(store, s3):
    store.write_template("default/welcome.html", "v1")
    etag = store.fetch_template("default/welcome.html").etag
    s3.delete_object(Bucket=BUCKET, Key="default/welcome.html")
    gone = store.fetch_template("default/welcome.html", if_none_match=etag)
    assert gone.source is None and not gone.not_modified


def test_the_cache_revalidates_s3_templates_with_a_conditional_get(store, s3):
    import threading

    from emailops.core.template_cache import CachedTemplateStore

    now = [0.0]
    cached = CachedTemplateStore(store, seconds=60, lock=threading.Lock(), clock=lambda: now[0])
    calls: list[dict] = []
    client = store.client
    record = lambda params, **_: calls.append(params)  # noqa: E731
    client.meta.events.register("provide-client-params.s3.GetObject", record)
    try:
        store.write_template("default/welcome.html", "v1")
        assert cached.read_template("default/welcome.html") == "v1"
        now[0] = 60
        assert cached.read_template("default/welcome.html") == "v1"
        store.write_template("default/welcome.html", "v2")
        now[0] = 120
        assert cached.read_template("default/welcome.html") == "v2"
    finally:
        client.meta.events.unregister("provide-client-params.s3.GetObject", record)
    assert [c.get("IfNoneMatch") is not None for c in calls] == [False, True, True]


def test_every_thread_reads_through_the_one_shared_client(store, monkeypatch):
    """No per-thread storage object (a django-storages boto3 resource was ~5 MB of RSS each):
    reads from many threads create no client at all."""
    import threading

    import botocore.session

    store.write_template("default/welcome.html", "<p>hi</p>")
    created: list[str] = []
    original = botocore.session.Session.create_client

    def counting(self, service_name, *args, **kwargs):
        created.append(service_name)
        return original(self, service_name, *args, **kwargs)

    monkeypatch.setattr(botocore.session.Session, "create_client", counting)
    threads = [
        threading.Thread(target=store.read_template, args=("default/welcome.html",))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert created == []


def test_a_written_template_is_served_as_html(store, s3):
    store.write_template("default/welcome.html", "<p>hi</p>")
    head = s3.head_object(Bucket=BUCKET, Key="default/welcome.html")
    assert head["ContentType"].startswith("text/html")
