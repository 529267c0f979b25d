"""The S3 endpoint (``dora.worker.s3.port``): S3's REST API over the one ``WorkerService``.

One module per concern: ``keys`` (its property keys, declarations only, so the key registry
imports no server code), ``buckets`` (bucket names to mount roots, keys to URIs), ``xmlbody``
(S3's XML answers and request bodies), ``errors`` (S3's error codes and the catalogue mapped to
them once), ``request`` (what every operation starts from: the parsed address, the verified
caller, the request context), ``objects``, ``listing`` and ``multipart`` (the operations), and
``routing`` (which operation a request is, the surface and the port it is served on). This
module imports nothing."""
