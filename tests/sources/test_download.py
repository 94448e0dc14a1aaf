"""Verified downloads against an http.server on 127.0.0.1 serving the fixture files."""

from __future__ import annotations

import hashlib
import http.server
import os
import socket
import threading
from pathlib import Path

import pytest

from gradebench.datasets.esnli.reader import read_esnli_csv
from gradebench.errors import ChecksumError, DownloadError, InvalidArgumentError
from gradebench.hashing import git_blob_sha1_file
from gradebench.io.download import RemoteFile, cache_dir, fetch, fetch_all, verify
from tests.conftest import FIXTURES

CSV = FIXTURES / "esnli" / "csv"


class Server:
    """Serves the files of a folder on 127.0.0.1:<free port>, counting requests."""

    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):  # noqa: N802 - http.server API
                outer.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with Server(CSV) as srv:
        yield srv


def _remote(srv: Server, name: str, split: str = "validation", **checksums) -> RemoteFile:
    return RemoteFile(filename=name, url=srv.base + name, split=split, **checksums)


def _sha256(name: str) -> str:
    return hashlib.sha256((CSV / name).read_bytes()).hexdigest()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".incomplete" in p.name)


def test_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADEBENCH_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("GRADEBENCH_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "gradebench"


def test_git_blob_sha1_verified_then_cached(server, tmp_path):
    remote = _remote(server, "esnli_dev.csv", git_blob_sha1=git_blob_sha1_file(CSV / "esnli_dev.csv"))
    dest = cache_dir() / "esnli"
    path = fetch(remote, dest, progress=False)
    assert path == dest / "esnli_dev.csv"
    assert path.read_bytes() == (CSV / "esnli_dev.csv").read_bytes()
    assert server.requests == ["/esnli_dev.csv"]
    # second call: verified from the cache, no request
    assert fetch(remote, dest, progress=False) == path
    assert server.requests == ["/esnli_dev.csv"]
    assert verify(remote, path)
    assert _leftovers(dest) == []


def test_sha256_and_both_checksums(server, tmp_path):
    name = "esnli_test.csv"
    path = fetch(_remote(server, name, sha256=_sha256(name)), tmp_path, progress=False)
    assert path.read_bytes() == (CSV / name).read_bytes()
    both = _remote(server, name, sha256=_sha256(name), git_blob_sha1=git_blob_sha1_file(CSV / name))
    assert fetch(both, tmp_path / "b", progress=False).is_file()


def test_corrupt_cached_copy_is_replaced(server, tmp_path):
    remote = _remote(server, "esnli_dev.csv", sha256=_sha256("esnli_dev.csv"))
    (tmp_path / "esnli_dev.csv").write_bytes(b"half a file")
    path = fetch(remote, tmp_path, progress=False)
    assert path.read_bytes() == (CSV / "esnli_dev.csv").read_bytes()
    assert server.requests == ["/esnli_dev.csv"]


def test_checksum_mismatch_deletes_download(server, tmp_path):
    wrong = "0" * 64
    remote = _remote(server, "esnli_dev.csv", sha256=wrong)
    with pytest.raises(ChecksumError) as info:
        fetch(remote, tmp_path, progress=False)
    msg = str(info.value)
    assert remote.url in msg and f"expected sha256 {wrong}" in msg and _sha256("esnli_dev.csv") in msg
    assert "deleted" in msg and "\n" not in msg
    assert list(tmp_path.iterdir()) == []


def test_git_blob_mismatch_keeps_previous_good_file_out(server, tmp_path):
    remote = _remote(server, "esnli_dev.csv", git_blob_sha1="f" * 40)
    with pytest.raises(ChecksumError, match="expected git_blob_sha1 f{40}, got [0-9a-f]{40}"):
        fetch(remote, tmp_path, progress=False)
    assert not (tmp_path / "esnli_dev.csv").exists() and _leftovers(tmp_path) == []


def test_missing_checksum_is_refused_before_any_request(server, tmp_path):
    remote = _remote(server, "esnli_dev.csv")
    with pytest.raises(ChecksumError, match="no checksum for esnli_dev.csv.*add sha256: or git_blob_sha1:"):
        fetch(remote, tmp_path, progress=False)
    good = _remote(server, "esnli_test.csv", sha256=_sha256("esnli_test.csv"))
    with pytest.raises(ChecksumError):
        fetch_all([good, remote], tmp_path, progress=False)
    assert server.requests == []


def test_http_404(server, tmp_path):
    remote = _remote(server, "esnli_nope.csv", sha256="0" * 64)
    with pytest.raises(DownloadError) as info:
        fetch(remote, tmp_path, progress=False)
    msg = str(info.value)
    assert f"cannot download {remote.url}: HTTP 404" in msg and "--source PATH" in msg
    assert list(tmp_path.iterdir()) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/esnli_dev.csv"
    remote = RemoteFile("esnli_dev.csv", url, "validation", sha256="0" * 64)
    with pytest.raises(DownloadError) as info:
        fetch(remote, tmp_path / "dl", timeout=5, progress=False)
    assert url in str(info.value) and "refused" in str(info.value).lower()
    assert _leftovers(tmp_path) == [] and not (tmp_path / "dl" / "esnli_dev.csv").exists()


def test_truncated_body(tmp_path):
    """A server that promises more bytes than it sends: DownloadError, nothing left behind."""

    class Short(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"pairID,gold_label")
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Short)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/esnli_dev.csv"
        with pytest.raises(DownloadError, match="broke off"):
            fetch(RemoteFile("esnli_dev.csv", url, "validation", sha256="0" * 64), tmp_path, timeout=5, progress=False)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert list(tmp_path.iterdir()) == []


def test_fetch_all_groups_by_split_in_order(server, tmp_path):
    names = [
        ("esnli_train_1.csv", "train"),
        ("esnli_train_2.csv", "train"),
        ("esnli_dev.csv", "validation"),
        ("esnli_test.csv", "test"),
    ]
    remotes = [_remote(server, n, s, git_blob_sha1=git_blob_sha1_file(CSV / n)) for n, s in names]
    got = fetch_all(remotes, tmp_path, progress=False)
    assert {s: [p.name for p in ps] for s, ps in got.items()} == {
        "train": ["esnli_train_1.csv", "esnli_train_2.csv"],
        "validation": ["esnli_dev.csv"],
        "test": ["esnli_test.csv"],
    }
    data = read_esnli_csv(got)
    assert {s: len(v) for s, v in data.examples.items()} == {"train": 5, "validation": 12, "test": 2}
    n = len(server.requests)
    fetch_all(remotes, tmp_path, progress=False)
    assert len(server.requests) == n == 4
    assert _leftovers(tmp_path) == []


def test_progress_bar_forced_on(server, tmp_path, capsys):
    fetch(_remote(server, "esnli_dev.csv", sha256=_sha256("esnli_dev.csv")), tmp_path, progress=True)
    assert capsys.readouterr().out == ""


def test_filename_must_be_plain(server, tmp_path):
    with pytest.raises(InvalidArgumentError):
        fetch(RemoteFile("../x.csv", server.base + "esnli_dev.csv", "validation", sha256="0" * 64), tmp_path)


def test_incomplete_name_uses_pid(server, tmp_path, monkeypatch):
    """The temporary name is <file>.incomplete-<pid> in the destination folder, renamed at the end."""
    seen: list[str] = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    fetch(_remote(server, "esnli_dev.csv", sha256=_sha256("esnli_dev.csv")), tmp_path, progress=False)
    assert seen == [f"esnli_dev.csv.incomplete-{os.getpid()}"]


@pytest.mark.parametrize("failure", ["http-404", "checksum", "refused"])
def test_a_failed_download_leaves_no_cache_folder(server, tmp_path, failure):
    """Issue 16.6: a failed download left an empty cache folder (which reads as a cache that exists)."""
    cache = tmp_path / "cache"
    dest = cache / "esnli" / "0123456789ab"
    if failure == "http-404":
        remote, error = _remote(server, "esnli_nope.csv", sha256="0" * 64), DownloadError
    elif failure == "checksum":
        remote, error = _remote(server, "esnli_dev.csv", sha256="0" * 64), ChecksumError
    else:
        url = f"http://127.0.0.1:{_free_port()}/esnli_dev.csv"
        remote, error = RemoteFile("esnli_dev.csv", url, "validation", sha256="0" * 64), DownloadError
    with pytest.raises(error):
        fetch(remote, dest, timeout=5, progress=False)
    assert not cache.exists()  # every folder the download created is gone again


def test_a_failed_download_keeps_folders_it_did_not_create(server, tmp_path):
    dest = tmp_path / "cache" / "esnli"
    dest.mkdir(parents=True)
    (tmp_path / "cache" / "other").mkdir()
    with pytest.raises(DownloadError):
        fetch(_remote(server, "esnli_nope.csv", sha256="0" * 64), dest / "new" / "deeper", progress=False)
    assert dest.is_dir() and not (dest / "new").exists() and (tmp_path / "cache" / "other").is_dir()
    good = _remote(server, "esnli_dev.csv", sha256=_sha256("esnli_dev.csv"))
    bad = _remote(server, "esnli_nope.csv", sha256="0" * 64)
    with pytest.raises(DownloadError):
        fetch_all([good, bad], dest / "both", progress=False)
    assert [p.name for p in (dest / "both").iterdir()] == ["esnli_dev.csv"]  # the verified file is a cache
