"""Tests of winrate.io.download against a local HTTP server on 127.0.0.1 started here.

The suite never touches the internet: every URL is the local server (port chosen by the
OS) or a closed local port.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from tests.note_codes import warns_code
from winrate.io import datasets, download
from winrate.io.download import (
    ChecksumError,
    DataFile,
    DataUnavailableError,
    DownloadError,
    download_file,
)

GOOD = b"id,prompt\n" + b"0,1\n" * 5000  # several chunks
CLOSED = "http://127.0.0.1:9"  # discard port: nothing listens, connection refused


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves files from the server's directory; any path under /error/ answers 500."""

    def do_GET(self):  # noqa: N802 (http.server naming)
        """Answer 500 for /error/..., else serve the file."""
        if self.path.startswith("/error/"):
            self.send_error(500, "synthetic server error")
            return
        super().do_GET()

    def log_message(self, *args):
        """Keep test output quiet."""


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over ``tmp_path/www``; yields (base URL, served folder)."""
    root = tmp_path / "www"
    root.mkdir()

    def handler(*args, **kwargs):
        return _Handler(*args, directory=str(root), **kwargs)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("WINRATE_DATA_MIRROR", CLOSED)
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WINRATE_DATA", raising=False)
    monkeypatch.setattr(download, "project_data_dir", lambda root=None: None)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _serve(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_good_file(server, tmp_path):
    base, root = server
    _serve(root, "demo/file.csv", GOOD)
    entry = DataFile("demo/file.csv", "https://example.invalid/up/file.csv", _sha(GOOD))
    dest = download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert dest == tmp_path / "cache" / "demo" / "file.csv"
    assert dest.read_bytes() == GOOD
    assert _leftovers(tmp_path / "cache") == ["file.csv"]  # no temporary file left


@pytest.fixture
def umask():
    """Set the process umask for one test, then put the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)],
                         ids=["umask022", "umask027", "umask002"])
def test_downloaded_file_gets_the_umask_mode_not_owner_only(server, tmp_path, umask, mask,
                                                             mode):
    base, root = server
    umask(mask)
    _serve(root, "demo/file.csv", GOOD)
    entry = DataFile("demo/file.csv", "https://example.invalid/file.csv", _sha(GOOD))
    dest = download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert dest.stat().st_mode & 0o777 == mode
    payload = b'{"models": []}'
    _serve(root, "arena/pkg-1.0.tar.gz", _tarball("pkg/a.json", payload))
    member = DataFile("arena/a.json", "https://example.invalid/pkg-1.0.tar.gz", None,
                      member="pkg/a.json", member_sha256=_sha(payload))
    with warns_code("unverified-download"):  # the tarball has no pinned checksum
        extracted = download_file(member, tmp_path / "cache", mirror=base, progress=False)
    assert extracted.stat().st_mode & 0o777 == mode


def test_wrong_checksum_leaves_nothing(server, tmp_path):
    base, root = server
    _serve(root, "demo/file.csv", GOOD)
    entry = DataFile("demo/file.csv", "https://example.invalid/file.csv", _sha(b"other"))
    with pytest.raises(ChecksumError, match="SHA-256 mismatch.*expected") as info:
        download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert _sha(GOOD) in str(info.value)
    assert _leftovers(tmp_path / "cache") == []


def test_server_error_leaves_nothing(server, tmp_path):
    base, _ = server
    entry = DataFile("demo/x.csv", "https://example.invalid/x.csv", _sha(GOOD))
    with pytest.raises(DownloadError, match="HTTP 500"):
        download_file(entry, tmp_path / "cache", mirror=f"{base}/error", progress=False)
    assert _leftovers(tmp_path / "cache") == []


def test_existing_file_survives_a_failed_download(server, tmp_path):
    base, root = server
    _serve(root, "demo/file.csv", GOOD)
    old = tmp_path / "cache" / "demo" / "file.csv"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"previous good copy")
    entry = DataFile("demo/file.csv", "https://example.invalid/file.csv", _sha(b"nope"))
    with pytest.raises(ChecksumError):
        download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert old.read_bytes() == b"previous good copy"
    assert _leftovers(tmp_path / "cache") == ["file.csv"]


def test_unverified_download_warns_with_its_checksum(server, tmp_path):
    base, root = server
    _serve(root, "demo/file.csv", GOOD)
    entry = DataFile("demo/file.csv", "https://example.invalid/file.csv", None)
    with warns_code("unverified-download") as found:
        download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert _sha(GOOD) in found[0]
    assert (tmp_path / "cache" / "demo" / "file.csv").read_bytes() == GOOD


def _tarball(member: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_archive_member_extracted_and_checked(server, tmp_path):
    base, root = server
    payload = json.dumps({"models": ["m0", "m1"], "X": [[0, 1]], "Y": [[2, 1, 0, 1]]}).encode()
    archive = _tarball("pkg-1.0/pkg/data/arena.json", payload)
    _serve(root, "arena/pkg-1.0.tar.gz", archive)
    entry = DataFile("arena/arena.json", "https://example.invalid/pkg-1.0.tar.gz",
                     _sha(archive), member="pkg-1.0/pkg/data/arena.json",
                     member_sha256=_sha(payload))
    dest = download_file(entry, tmp_path / "cache", mirror=base, progress=False)
    assert dest.read_bytes() == payload
    assert _leftovers(tmp_path / "cache") == ["arena.json"]
    bad = DataFile("arena/arena.json", entry.url, _sha(archive), member=entry.member,
                   member_sha256=_sha(b"x"))
    dest.unlink()
    with pytest.raises(ChecksumError, match="extracted"):
        download_file(bad, tmp_path / "cache", mirror=base, progress=False)
    missing = DataFile("arena/arena.json", entry.url, _sha(archive), member="nope.json",
                       member_sha256=None)
    with pytest.raises(DownloadError, match="nope.json"):
        download_file(missing, tmp_path / "cache", mirror=base, progress=False)
    assert _leftovers(tmp_path / "cache") == []


def _pandalm_files() -> dict[str, bytes]:
    item = {"idx": 0, "motivation_app": "A", "cmp_key": "m1_m2", "instruction": "i",
            "input": "", "response1": "x", "response2": "y", "annotator1": 1,
            "annotator2": 2, "annotator3": 0}
    return {
        "testset-v1.json": json.dumps([item]).encode(),
        "gpt-3.5-turbo-testset-v1.json": json.dumps([{"idx": 0, "gpt_result": "2"}]).encode(),
        "pandalm-7b-testset-v1.json": json.dumps([{"idx": 0, "pandalm_result": 0}]).encode(),
    }


def test_load_downloads_missing_files_through_mirror(server, tmp_path, monkeypatch):
    base, root = server
    files = _pandalm_files()
    entries = []
    for name, data in files.items():
        _serve(root, f"pandalm/{name}", data)
        entries.append(DataFile(f"pandalm/{name}", f"https://example.invalid/{name}",
                                _sha(data)))
    monkeypatch.setitem(download.FILES, "pandalm", tuple(entries))
    monkeypatch.setenv("WINRATE_DATA_MIRROR", base)  # the env var route
    shared = tmp_path / "shared"
    monkeypatch.setenv("WINRATE_DATA", str(shared))
    (shared / "pandalm").mkdir(parents=True)  # one file already in WINRATE_DATA
    (shared / "pandalm" / "testset-v1.json").write_bytes(files["testset-v1.json"])
    log = datasets.load("pandalm", progress=False)
    assert len(log) == 5
    assert sorted(_leftovers(tmp_path / "cache")) == ["gpt-3.5-turbo-testset-v1.json",
                                                      "pandalm-7b-testset-v1.json"]
    assert list(log["outcome"].astype(str)) == ["a", "b", "tie", "b", "tie"]


def test_no_network_message_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "shared"))
    with pytest.raises(DataUnavailableError) as info:
        datasets.load("chatbot_arena", progress=False)  # mirror = closed local port
    msg = str(info.value)
    assert "Looked in:" in msg
    assert str(tmp_path / "shared") in msg and str(tmp_path / "cache") in msg
    assert "could not reach" in msg and "WINRATE_DATA" in msg
    assert f"{CLOSED}/chatbot_arena/leaderbot-0.4.3.tar.gz" in msg
    assert _leftovers(tmp_path / "cache") == []


def test_pip_entry_hint_is_a_command_a_user_can_run(tmp_path, monkeypatch):
    """Without a mirror the chatbot_arena hint is the pip command and the member to
    extract, not the internal 'pip:' address."""
    monkeypatch.delenv("WINRATE_DATA_MIRROR")
    with pytest.raises(DataUnavailableError) as info:
        datasets.load("chatbot_arena", download=False)
    msg = str(info.value)
    target = tmp_path / "cache" / "chatbot_arena" / "chatbotarena_20240814.json"
    member = "leaderbot-0.4.3/leaderbot/data/chatbotarena_20240814.json"
    assert "pip:" not in msg
    assert "pip download --no-deps --no-binary :all: leaderbot==0.4.3" in msg
    assert f"tar -xzOf leaderbot-0.4.3.tar.gz {member} > {target}" in msg
    # the shell lines after the pip command do the job on a stand-in archive
    if shutil.which("tar") is None or " " in str(tmp_path):
        return
    work = tmp_path / "work"
    work.mkdir()
    (work / "leaderbot-0.4.3.tar.gz").write_bytes(_tarball(member, b"{}"))
    lines = msg.splitlines()
    start = next(i for i, line in enumerate(lines) if "pip download" in line)
    script = "\n".join(line.strip() for line in lines[start + 1:start + 3])
    subprocess.run(["sh", "-ec", script], cwd=work, check=True)
    assert target.read_bytes() == b"{}"


def test_explicit_data_dir_is_the_only_place(tmp_path, monkeypatch):
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "shared"))
    with pytest.raises(DataUnavailableError) as info:
        datasets.load("pandalm", data_dir=tmp_path / "mine", download=False)
    msg = str(info.value)
    assert str(tmp_path / "mine") in msg and str(tmp_path / "shared") not in msg


def test_cache_dir_and_search_order(tmp_path, monkeypatch):
    monkeypatch.delenv("WINRATE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if download.sys.platform not in ("win32", "darwin"):
        assert download.cache_dir() == tmp_path / "xdg" / "winrate"
    monkeypatch.setenv("WINRATE_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("WINRATE_DATA", str(tmp_path / "d"))
    assert [d for d, _ in download.search_dirs()] == [tmp_path / "d", tmp_path / "c"]
    assert [d for d, _ in download.search_dirs(tmp_path / "x")] == [tmp_path / "x"]


def test_download_table_is_pinned():
    for entry in (e for entries in download.FILES.values() for e in entries):
        assert entry.url.startswith(("https://", "pip:"))
        assert entry.sha256 is None or len(entry.sha256) == 64
        if "raw.githubusercontent.com" in entry.url:
            commit = entry.url.split("/")[5]
            assert len(commit) >= 12 and all(c in "0123456789abcdef" for c in commit)
    assert len(download.FILES["mmlu_pro"]) == 29
    assert all(e.sha256 is None for e in download.FILES["mmlu_pro"])
    (arena,) = download.FILES["chatbot_arena"]
    assert arena.member and arena.member_sha256 and arena.sha256
    assert arena.url.startswith("pip:leaderbot==0.4.3/")  # pinned version, fetched by pip


@pytest.mark.parametrize("progress, shown", [(None, False), (False, False), (True, True)])
def test_download_bar_follows_the_progress_rule(server, tmp_path, monkeypatch, capsys,
                                                progress, shown):
    """Off when stderr is not a terminal (None) or with --no-progress; on when asked."""
    from winrate import progress as bars

    monkeypatch.setattr(bars, "DELAY", 0.0)
    base, root = server
    _serve(root, "demo/file.csv", GOOD)
    entry = DataFile("demo/file.csv", "https://example.invalid/up/file.csv", _sha(GOOD))
    download_file(entry, tmp_path / "cache", mirror=base, progress=progress)
    assert ("file.csv" in capsys.readouterr().err) == shown
