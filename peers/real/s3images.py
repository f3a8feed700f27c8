"""The images of a bucket's ImageFolder, for the bucket peers that write
their own format from them first (peer_streaming, peer_litdata): the
objects under an s3:// prefix, listed and read with boto3 from the endpoint
and credentials of AWS_ENDPOINT_URL, AWS_REGION and
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (path-style addressing: a local
server)."""

import os

import common


def split(url):
    """s3://bucket/key/prefix -> (bucket, "key/prefix/")."""
    if not url.startswith("s3://"):
        raise SystemExit(f"{url}: want an s3:// prefix")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    prefix = prefix.strip("/")
    return bucket, prefix + "/" if prefix else ""


def endpoint():
    ep = os.environ.get("AWS_ENDPOINT_URL")
    if not ep:
        raise SystemExit("AWS_ENDPOINT_URL is not set: the bucket peers read the local S3 server")
    return ep


def client():
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint(), region_name=os.environ.get("AWS_REGION", "us-east-1"),
                        config=Config(s3={"addressing_style": "path"}))


def keys(url):
    """The (bucket, sorted JPEG keys) under url: the ImageFolder's order
    (classes sorted, then files)."""
    bucket, prefix = split(url)
    s3 = client()
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out += [o["Key"] for o in page.get("Contents", []) if o["Key"].endswith(common.IMAGE_EXTS)]
    if not out:
        raise SystemExit(f"{url}: no JPEGs")
    return bucket, sorted(out)


def format_url(data, suffix):
    """Where a peer's own format of the ImageFolder at data goes: beside
    it, data + "." + suffix (outside the ImageFolder's prefix)."""
    return data.rstrip("/") + "." + suffix
