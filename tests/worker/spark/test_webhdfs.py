"""webhdfs:// URLs for UFS URIs and the Hadoop settings that carry a worker's token."""

from worker.spark.webhdfs import hadoop_conf, spark_conf, webhdfs_url


def test_urls_map_the_scheme_to_the_first_segment() -> None:
    assert webhdfs_url("h:1", "s3://bucket/t/") == "webhdfs://h:1/s3/bucket/t"
    assert webhdfs_url("h:1", "file:///data/x.csv") == "webhdfs://h:1/file/data/x.csv"


def test_the_token_travels_through_the_oauth2_grant() -> None:
    conf = hadoop_conf("127.0.0.1:28080", "tok")
    assert conf["dfs.webhdfs.oauth2.refresh.url"] == "http://127.0.0.1:28080/webhdfs/oauth2/token"
    assert conf["dfs.webhdfs.oauth2.credential"] == "tok"
    assert spark_conf("127.0.0.1:28080", "tok")["spark.hadoop.dfs.webhdfs.oauth2.enabled"] == "true"
    assert "dfs.webhdfs.oauth2.enabled" not in hadoop_conf("127.0.0.1:28080", None)


def test_parquet_reads_row_groups_whole_rather_than_chunk_by_chunk() -> None:
    for token in ("tok", None):
        assert hadoop_conf("h:1", token)["parquet.hadoop.vectored.io.enabled"] == "false"
