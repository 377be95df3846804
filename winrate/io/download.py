"""Find the real-data files of :mod:`winrate.io.datasets` on disk, or download them.

Where files are looked for, in this order:

1. the ``data_dir`` argument, when given (then *only* there, and downloads go there);
2. the directory named by the environment variable ``WINRATE_DATA``; when it is not set,
   the project's shared data folder ``../shared/data`` beside the source checkout winrate
   runs from (the folder holding its ``pyproject.toml``), if that folder exists: the
   folder the Makefile exports as ``WINRATE_DATA``, so a command finds the same data
   inside and outside ``make``, from any working directory;
3. the user cache directory: ``$WINRATE_CACHE`` if set, else ``$XDG_CACHE_HOME/winrate``
   (default ``~/.cache/winrate``; ``~/Library/Caches/winrate`` on macOS,
   ``%LOCALAPPDATA%/winrate/Cache`` on Windows).

Each directory has one sub-folder per dataset (``<dir>/llmfao/crowd-comparisons.csv``, ...),
the layout of the project's shared data folder. A file found nowhere is downloaded into
the user cache (or into ``data_dir``) from its pinned upstream address: commit-pinned raw
GitHub files, and for ``chatbot_arena`` the source distribution of the PyPI package
leaderbot 0.4.3, from which the one JSON file is extracted.

Every download is streamed to a temporary file in the destination directory, its SHA-256
is checked against the table :data:`FILES`, and only then is it moved into place with
:func:`os.replace`, so an interrupted or corrupt download never leaves a file under the
final name; it gets the mode of an ordinary new file (``0o666 & ~umask``), not the
owner-only mode of a temporary file. Where no checksum is known (the upstream MMLU-Pro
zips: the shared copies were slimmed, so their bytes differ from upstream), the table says
``None`` and the download is kept with a :class:`~winrate.errors.WinrateWarning` that
prints the SHA-256 it got, so it can be pinned later.

``WINRATE_DATA_MIRROR`` (or the ``mirror`` argument) replaces every upstream address by
``<mirror>/<dataset>/<file name>``, e.g. a local HTTP server in tests or an internal mirror.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from winrate import notes

__all__ = [
    "ChecksumError",
    "DataFile",
    "DataUnavailableError",
    "DownloadError",
    "FILES",
    "MMLU_PRO_MODELS",
    "cache_dir",
    "download_file",
    "ensure_files",
    "search_dirs",
]

ENV_DATA = "WINRATE_DATA"
ENV_CACHE = "WINRATE_CACHE"
ENV_MIRROR = "WINRATE_DATA_MIRROR"
_PIP_SCHEME = "pip:"
_CHUNK = 1 << 16
_TIMEOUT_S = 60.0


class DownloadError(OSError):
    """A data file could not be downloaded (network error, HTTP error, bad archive).

    ``unreachable`` is True when the server could not be reached at all (no network),
    as opposed to a server that answered with an error.
    """

    unreachable: bool = False


class ChecksumError(DownloadError):
    """A downloaded file's SHA-256 differs from the pinned one; nothing was kept."""


class DataUnavailableError(FileNotFoundError):
    """Data files are on no searched directory and could not be downloaded.

    The message lists every directory searched, the missing files with their download
    addresses, and how to provide them.
    """


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: where it lives locally and where it comes from.

    Attributes
    ----------
    path : path relative to a data directory, ``"<dataset>/<file name>"``.
    url : pinned upstream address.
    sha256 : expected SHA-256 (hex) of the downloaded bytes; ``None`` = unknown, the
        download is kept unverified with a warning.
    member : for an archive (``.tar.gz``) download, the member to extract as ``path``;
        ``sha256`` then checks the archive and ``member_sha256`` the extracted file.
    member_sha256 : expected SHA-256 of the extracted member.
    """

    path: str
    url: str
    sha256: str | None
    member: str | None = None
    member_sha256: str | None = None

    @property
    def dataset(self) -> str:
        """The dataset sub-folder of :attr:`path`."""
        return self.path.split("/", 1)[0]

    @property
    def name(self) -> str:
        """The file name of :attr:`path`."""
        return self.path.rsplit("/", 1)[-1]


# Commits named in the shared data README (abbreviated hashes, as published there).
_MMLU_PRO_COMMIT = "f418b116db00"
_LLMFAO_COMMIT = "9e224e94a401"
_EVALICA_COMMIT = "2ebe79e3a191"
_PANDALM_COMMIT = "3871806e72b4"
_RAW = "https://raw.githubusercontent.com"

#: The 29 models of the MMLU-Pro ``eval_results`` zips (the ``<model>`` of the file names).
MMLU_PRO_MODELS: tuple[str, ...] = (
    "DeepSeek-Coder-V2", "Llama-2-13b-hf", "Llama-2-70b-hf", "Llama-2-7b-hf",
    "Meta-Llama-3-70B", "Meta-Llama-3-8B", "Meta-Llama-3_1-70B-Instruct",
    "Meta-Llama-3_1-70B", "Meta-Llama-3_1-8B-Instruct", "Meta-Llama-3_1-8B",
    "Mistral-7B-Instruct-v0.1", "Mistral-7B-Instruct-v0.2", "Mistral-7B-v0.1",
    "Mistral-7B-v0.2-hf", "Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B-v0.1",
    "Phi-3-mini-4k-instruct", "Qwen1.5-110B", "Qwen1.5-72B-Chat", "Qwen1.5-7B-Chat",
    "Yi-34B", "Yi-6B", "Yi-6b-Chat", "c4ai-command-r-v01", "gemini-1.5-flash-002",
    "gemini-1.5-pro-002", "gemma-7b", "jamba-1.5-large", "mathstral-7B",
)


def mmlu_pro_zip_name(model: str) -> str:
    """Upstream file name of one model's MMLU-Pro outputs."""
    return f"model_outputs_{model}_5shots.zip"


def mmlu_pro_slim_name(model: str) -> str:
    """File name of one model's slimmed MMLU-Pro outputs (the shared-data layout)."""
    return f"model_outputs_{model}_5shots.slim.json.gz"


def _mmlu_pro_files() -> tuple[DataFile, ...]:
    base = f"{_RAW}/TIGER-AI-Lab/MMLU-Pro/{_MMLU_PRO_COMMIT}/eval_results"
    return tuple(
        DataFile(f"mmlu_pro/{mmlu_pro_zip_name(m)}", f"{base}/{mmlu_pro_zip_name(m)}", None)
        for m in MMLU_PRO_MODELS
    )


def _llmfao_files() -> tuple[DataFile, ...]:
    base = f"{_RAW}/dustalov/llmfao/{_LLMFAO_COMMIT}"
    sums = {
        "crowd-comparisons.csv":
            "106564a4bf06f047a4662979384313c22d9b4ca901e780f9e8419f8e5581adb1",
        "gpt3-comparisons.csv":
            "e430a8ae338f0531b7b3cf96472e9200b9c0a9858987b83531d91459a5f07086",
        "gpt4-comparisons.csv":
            "601c1b35438b00cb9b338e59bea74af17143ca9a91aff2403ba62f2c6db560d1",
        "models.jsonl": "a94ddd33e2034f87505b548c4ff6bea81513efe6888f24960c958546b6279669",
        "prompts.jsonl": "917d233b18976244edf967be9d252ff344c024d9d4ed07780f12190becc3e9fc",
    }
    files = [DataFile(f"llmfao/{name}", f"{base}/{name}", sha) for name, sha in sums.items()]
    files.append(DataFile(
        "llmfao/evalica-golden.csv",
        f"{_RAW}/dustalov/evalica/{_EVALICA_COMMIT}/llmfao-golden.csv",
        "e860654541c6e8aac859ba513f7f3458e1ac9f326a2f6895960688bb2d171145",
    ))
    return tuple(files)


def _pandalm_files() -> tuple[DataFile, ...]:
    base = f"{_RAW}/WeOpenML/PandaLM/{_PANDALM_COMMIT}/data"
    sums = {
        "testset-v1.json": "cc154f9067c7382d7ea86f8f246511a5e1ac87e1fddd845c5938d789505b07a4",
        "gpt-3.5-turbo-testset-v1.json":
            "4c00aa7b3eeae504050a037422ba6f5b0a2ee041680f47bb77b8a4b549b128e3",
        "pandalm-7b-testset-v1.json":
            "9a40b62a7bb2aa87ca77eb8bfcb51539b5a62f974ce91678d30e834d65ed0a7e",
    }
    return tuple(DataFile(f"pandalm/{name}", f"{base}/{name}", sha) for name, sha in sums.items())


def _chatbot_arena_files() -> tuple[DataFile, ...]:
    # The source distribution of leaderbot 0.4.3, fetched by pip (the ordinary client for
    # the package index); its sha256 is the one the index publishes.
    return (DataFile(
        "chatbot_arena/chatbotarena_20240814.json",
        f"{_PIP_SCHEME}leaderbot==0.4.3/leaderbot-0.4.3.tar.gz",
        "63877e4005a3b11b5873d073f03da9e42b035414e0dde671fb3d7ee5ff48c92a",
        member="leaderbot-0.4.3/leaderbot/data/chatbotarena_20240814.json",
        member_sha256="25dfb900a5f61ad87c3b4bc29d1cf9d8b1bd80fb3fe0463c68943246f21d532d",
    ),)


#: Every downloadable file, by dataset.
FILES: dict[str, tuple[DataFile, ...]] = {
    "mmlu_pro": _mmlu_pro_files(),
    "llmfao": _llmfao_files(),
    "pandalm": _pandalm_files(),
    "chatbot_arena": _chatbot_arena_files(),
}


def file_entry(path: str) -> DataFile:
    """The :data:`FILES` entry of a relative path such as ``"llmfao/models.jsonl"``."""
    for entry in FILES.get(path.split("/", 1)[0], ()):
        if entry.path == path:
            return entry
    raise KeyError(f"no download entry for {path!r}")


def cache_dir() -> Path:
    """The user cache directory for downloaded data (it need not exist yet)."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE]).expanduser()
    if sys.platform == "win32":
        root = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(root) / "winrate" / "Cache"
    if sys.platform == "darwin" and not os.environ.get("XDG_CACHE_HOME"):
        return Path.home() / "Library" / "Caches" / "winrate"
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root).expanduser() / "winrate"


def search_dirs(data_dir=None) -> list[tuple[Path, str]]:
    """Directories searched for data files, in order, each with where it came from.

    With ``data_dir`` given, only that directory; otherwise ``$WINRATE_DATA`` (if set;
    else the project's shared data folder, :func:`project_data_dir`, if there is one) and
    then the user cache directory.
    """
    if data_dir is not None:
        return [(Path(data_dir).expanduser(), "data_dir argument")]
    dirs = []
    if os.environ.get(ENV_DATA):
        dirs.append((Path(os.environ[ENV_DATA]).expanduser(), f"${ENV_DATA}"))
    elif project_data_dir() is not None:
        dirs.append((project_data_dir(), "the project's ../shared/data"))
    dirs.append((cache_dir(), "user cache directory"))
    return dirs


def project_data_dir(root: Path | None = None) -> Path | None:
    """``../shared/data`` beside the source checkout ``root`` (default: the one this
    module runs from, when it holds a ``pyproject.toml``): the Makefile's default of
    ``WINRATE_DATA``. None for an installed wheel or when the folder does not exist."""
    root = Path(__file__).resolve().parents[2] if root is None else Path(root)
    shared = root.parent / "shared" / "data"
    return shared if (root / "pyproject.toml").is_file() and shared.is_dir() else None


def download_dir(data_dir=None) -> Path:
    """Where missing files are downloaded: ``data_dir`` if given, else the user cache."""
    return Path(data_dir).expanduser() if data_dir is not None else cache_dir()


def _mirror_url(entry: DataFile, mirror: str | None) -> str:
    mirror = mirror if mirror is not None else os.environ.get(ENV_MIRROR)
    if not mirror:
        return entry.url
    upstream_name = entry.url.rsplit("/", 1)[-1]
    return f"{mirror.rstrip('/')}/{entry.dataset}/{upstream_name}"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(url: str, out, timeout: float) -> str:
    """``pip:<requirement>/<file>``: fetch a source distribution with pip, by package name.

    Copies the downloaded archive into ``out`` and returns the SHA-256 of its bytes.
    """
    requirement = url[len(_PIP_SCHEME):].split("/", 1)[0]
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                   "--no-binary", ":all:", "--timeout", str(int(timeout)), "-d", folder,
                   requirement]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        files = list(Path(folder).iterdir())
        if done.returncode != 0 or len(files) != 1:
            raise urllib.error.URLError(f"pip download {requirement} failed: "
                                        f"{done.stderr.strip().splitlines()[-1:]}")
        data = files[0].read_bytes()
    out.write(data)
    return hashlib.sha256(data).hexdigest()


def _stream(url: str, out, label: str, progress: bool | None, timeout: float) -> str:
    """Copy ``url`` into the open binary file ``out``; return the SHA-256 of the bytes. The
    bar follows :func:`winrate.progress.wanted` (None: on a terminal)."""
    import urllib.request  # HTTP and TLS load here, not in every command that reads a file

    from winrate.progress import bar

    if url.startswith(_PIP_SCHEME):
        return _pip_download(url, out, timeout)
    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "winrate-data-downloader"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        total = response.headers.get("Content-Length")
        with bar(total=int(total) if total and total.isdigit() else None, unit="B",
                 unit_scale=True, unit_divisor=1024, desc=label, progress=progress) as shown:
            for block in iter(lambda: response.read(_CHUNK), b""):
                out.write(block)
                digest.update(block)
                shown.update(len(block))
    return digest.hexdigest()


def _check_sha(got: str, expected: str | None, what: str, url: str) -> None:
    if expected is None:
        notes.emit(notes.unverified_download(what, url, got))
    elif got != expected:
        raise ChecksumError(
            f"{what}: SHA-256 mismatch for {url}: expected {expected}, got {got}. "
            "The download was discarded; nothing was written to the cache."
        )


def download_file(entry: DataFile, dest_dir, *, mirror: str | None = None,
                  progress: bool | None = None, timeout: float = _TIMEOUT_S) -> Path:
    """Download one :class:`DataFile` into ``dest_dir/entry.path``, verified and atomic.

    The bytes go to a temporary file next to the destination; after the SHA-256 check
    (and, for an archive entry, extraction and check of the member) the file is moved into
    place with :func:`os.replace`. On any failure the temporary file is removed and
    :class:`DownloadError` (or :class:`ChecksumError`) is raised.
    """
    dest = Path(dest_dir) / entry.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = _mirror_url(entry, mirror)
    tmp_paths: list[str] = []
    try:
        with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{entry.name}.",
                                         suffix=".part", delete=False) as out:
            tmp_paths.append(out.name)
            got = _stream(url, out, entry.name, progress, timeout)
        _check_sha(got, entry.sha256, entry.path, url)
        final_tmp = tmp_paths[0]
        if entry.member is not None:
            final_tmp = _extract_member(entry, Path(tmp_paths[0]), dest, url, tmp_paths)
        # NamedTemporaryFile creates owner-only files: give the usual 0o666 & ~umask
        os.chmod(final_tmp, 0o666 & ~_umask())
        os.replace(final_tmp, dest)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{entry.path}: HTTP {exc.code} {exc.reason} from {url}") from exc
    except ValueError as exc:  # not a URL urllib can open
        raise DownloadError(f"{entry.path}: cannot download from {url!r}: {exc}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        error = DownloadError(f"{entry.path}: could not reach {url}: {reason}")
        error.unreachable = True
        raise error from exc
    finally:
        for tmp in tmp_paths:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return dest


def _umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _extract_member(entry: DataFile, archive: Path, dest: Path, url: str,
                    tmp_paths: list[str]) -> str:
    """Extract ``entry.member`` of a downloaded tar archive to a checked temporary file."""
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            handle = tar.extractfile(entry.member)
            if handle is None:
                raise KeyError(entry.member)
            data = handle.read()
    except (tarfile.TarError, KeyError) as exc:
        raise DownloadError(
            f"{entry.path}: {url} is not a tar archive holding {entry.member!r} ({exc})"
        ) from exc
    _check_sha(hashlib.sha256(data).hexdigest(), entry.member_sha256,
               f"{entry.path} (extracted from {entry.member})", url)
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{entry.name}.",
                                     suffix=".part", delete=False) as out:
        tmp_paths.append(out.name)
        out.write(data)
    return out.name


def locate(candidates: Sequence[str], dirs: Iterable[tuple[Path, str]]) -> Path | None:
    """First existing file among ``candidates`` (relative paths), directory by directory."""
    for directory, _ in dirs:
        for rel in candidates:
            path = directory / rel
            if path.is_file():
                return path
    return None


def _unavailable_message(dataset: str, missing: Sequence[DataFile], dirs, dest: Path,
                         mirror: str | None, errors: Sequence[str]) -> str:
    lines = [f"dataset {dataset!r}: {len(missing)} file(s) are not on this machine"
             + (" and could not be downloaded." if errors else " (downloads disabled).")]
    lines.append("Looked in:")
    lines += [f"  - {directory} ({origin})" for directory, origin in dirs]
    if os.environ.get(ENV_DATA) is None:
        lines.append(f"  (${ENV_DATA} is not set)")
    if errors:
        lines.append("Download errors:")
        lines += [f"  - {err}" for err in errors[:5]]
        if len(errors) > 5:
            lines.append(f"  - ... and {len(errors) - 5} more")
    lines.append(
        f"To fix: set {ENV_DATA} to a directory holding <dir>/{dataset}/<file>, or pass "
        f"data_dir=..., or download these files by hand into {dest}:"
    )
    for entry in missing:
        url = _mirror_url(entry, mirror)
        if url.startswith(_PIP_SCHEME):
            lines += _pip_hint(entry, url, dest)
            continue
        extra = f" (extract {entry.member})" if entry.member else ""
        lines.append(f"  {url}{extra} -> {dest / entry.path}")
    return "\n".join(lines)


def _pip_hint(entry: DataFile, url: str, dest: Path) -> list[str]:
    """Shell commands that fetch a ``pip:`` entry by hand and put it in place."""
    requirement, archive = url[len(_PIP_SCHEME):].split("/", 1)
    target = dest / entry.path
    lines = [f"  {entry.path}: from the source distribution of {requirement} on PyPI:",
             f"    pip download --no-deps --no-binary :all: {requirement}"]
    if entry.member:
        lines += [f"    mkdir -p {shlex.quote(str(target.parent))}",
                  f"    tar -xzOf {archive} {shlex.quote(entry.member)} > "
                  f"{shlex.quote(str(target))}"]
    else:
        lines.append(f"    mv {archive} {shlex.quote(str(target))}")
    return lines


def ensure_files(dataset: str, wanted: Sequence[tuple[Sequence[str], DataFile]], *,
                 data_dir=None, download: bool = True, mirror: str | None = None,
                 progress: bool | None = None) -> list[Path]:
    """Resolve each wanted file to a path, downloading the missing ones.

    ``wanted`` pairs the accepted relative paths of one file (any of them will do, e.g. a
    slim copy or the upstream zip) with the :class:`DataFile` to download when none is
    found. Returns one path per wanted file, in order. Raises
    :class:`DataUnavailableError` naming every searched directory when files are missing
    and cannot be downloaded.
    """
    dirs = search_dirs(data_dir)
    dest = download_dir(data_dir)
    paths: list[Path | None] = [locate(cands, dirs) for cands, _ in wanted]
    missing = [i for i, p in enumerate(paths) if p is None]
    errors: list[str] = []
    if missing and download:
        for i in missing:
            try:
                paths[i] = download_file(wanted[i][1], dest, mirror=mirror, progress=progress)
            except ChecksumError:
                raise
            except OSError as exc:  # DownloadError, or a disk error writing the cache
                errors.append(str(exc))
                if getattr(exc, "unreachable", False):
                    break  # no network: do not try every other file
    still = [wanted[i][1] for i, p in enumerate(paths) if p is None]
    if still:
        raise DataUnavailableError(_unavailable_message(dataset, still, dirs, dest, mirror,
                                                        errors))
    return [p for p in paths if p is not None]

