"""The S3 endpoint (``dora.worker.s3.port``): S3's REST API over the one ``WorkerService``.

One module per concern: ``keys`` (its property keys, declarations only, so the key registry
imports no server code), ``buckets`` (bucket names to mount roots, keys to URIs), ``xmlbody``
(S3's XML answers and request bodies), ``errors`` (S3's error codes and the catalogue mapped to
them once), ``call`` (what every operation starts from: the endpoint built once, the request's
bucket, key, verified caller, contexts and checked body), ``conditions`` (If-* headers),
``bucketops``, ``objects``, ``listing`` and ``multipart`` (the operations), ``keepalive`` (an
answer kept busy while long work runs), ``forward`` (in a cluster, a key served by its owner),
and ``routing`` (which operation a request is, the surface and the port it is served on).
Signatures are ``worker.api.s3auth``'s. This module imports nothing."""
