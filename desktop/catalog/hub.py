"""Files from Hugging Face (or the mirror $HF_ENDPOINT names) through huggingface_hub: its `resolve` URLs, its HEAD
(which follows the Hub's own redirects and reads X-Repo-Commit, X-Linked-Etag and X-Linked-Size), its HTTP session
and its errors. The body is fetched here, written piece by piece as it arrives (tens of KiB) into a `.part` file that
a later attempt continues with a Range request (after a cut, or in the next run): a stop is seen within a piece, and
nothing received is fetched twice.

Blocking: run it in a worker thread. Every failure is a one-line `HubError`; a stop is `Cancelled`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
from huggingface_hub import get_hf_file_metadata, get_session, get_token, hf_hub_url, hf_raise_for_status
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from desktop.errors import BadInput

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 10.0  # connect and read: a stalled connection is given up (and continued) after this long
MAX_FRUITLESS = 5  # attempts in a row that brought no new byte before the download is given up
HASH_STEP = 4 * 1024 * 1024
OFFLINE_FIX = "Parley works offline with its bundled models; connect to the internet (or set HF_ENDPOINT) and retry"


class HubError(BadInput):
    """The Hub cannot give the file: offline, no such repo or file, refused, or a cut it did not recover from."""


class Cancelled(Exception):
    """The download was stopped by the person."""


@dataclass(frozen=True)
class Remote:
    """One file as the Hub describes it."""

    path: str  # in the repo
    url: str  # where its bytes are (the Hub's redirect target, e.g. a CDN)
    size: int | None
    etag: str  # the LFS sha256, or the git blob id for a small file
    commit: str

    def checksum(self, pinned: str = "") -> str:
        """What the file must hash to: a pinned sha256, else the Hub's ETag (64 hex: sha256, 40: a git blob id)."""
        if pinned:
            return f"sha256:{pinned.lower()}"
        tag = self.etag.lower()
        if len(tag) == 64 and _hex(tag):
            return f"sha256:{tag}"
        if len(tag) == 40 and _hex(tag) and self.size is not None:
            return f"git-sha1:{tag}"
        return ""


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def endpoint() -> str:
    """$HF_ENDPOINT (a mirror, or a test's server) read now, not when huggingface_hub was imported."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def describe(repo: str, path: str, revision: str) -> Remote:
    """HEAD the file's `resolve` URL (blocking); a HubError in one line when it cannot be had."""
    base = endpoint()
    url = hf_hub_url(repo, path, revision=revision, endpoint=base)
    try:
        meta = get_hf_file_metadata(url, timeout=TIMEOUT_S, endpoint=base)
    except (httpx2.HTTPError, HfHubHTTPError, OfflineModeIsEnabled) as error:
        raise HubError(_words(error, f"{repo}/{path}", base)) from None
    if not meta.commit_hash or not meta.etag:
        raise HubError(f"{_host(base)} is not a Hugging Face endpoint (no X-Repo-Commit or ETag); check HF_ENDPOINT")
    return Remote(path, meta.location, meta.size, meta.etag, meta.commit_hash)


def _words(error: Exception, what: str, base: str) -> str:
    """A huggingface_hub or transport error as one line naming the fix."""
    host = _host(base)
    if isinstance(error, OfflineModeIsEnabled):
        return f"HF_HUB_OFFLINE is set, so {what} cannot be downloaded; unset it to download"
    if isinstance(error, httpx2.TransportError):
        return f"cannot reach {host} ({type(error).__name__}); {OFFLINE_FIX}"
    if isinstance(error, GatedRepoError):
        return f"{what} is gated: accept its licence on {host} and log in with `hf auth login`"
    if isinstance(error, RepositoryNotFoundError):
        return f"{host} has no repository for {what}; the catalogue may be out of date"
    if isinstance(error, RevisionNotFoundError | RemoteEntryNotFoundError):
        return f"{host} has no {what} at this revision; the catalogue may be out of date"
    status = error.response.status_code if isinstance(error, HfHubHTTPError) else "?"
    return f"{host} answered HTTP {status} for {what}; try again later"


def _host(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2] or url


def fetch(remote: Remote, part: Path, stop: threading.Event, progress: Callable[[int], None]) -> None:
    """Bring `part` up to the whole file, continuing what it holds; attempts cut short are continued until
    MAX_FRUITLESS in a row bring nothing. `progress(n)` gets the bytes each step adds (negative: started over)."""
    fruitless = 0
    while True:
        before = _size(part)
        try:
            if _attempt(remote, part, stop, progress):
                return
        except httpx2.TransportError as error:
            cause = f"{type(error).__name__}"
        else:
            cause = f"{_size(part)} of {remote.size} bytes"
        fruitless = 0 if _size(part) > before else fruitless + 1
        if fruitless >= MAX_FRUITLESS:
            raise HubError(f"the download of {remote.path} keeps breaking off ({cause}); run it again to continue")


def _attempt(remote: Remote, part: Path, stop: threading.Event, progress: Callable[[int], None]) -> bool:
    """One GET from where `part` ends; True when the file is whole."""
    have = _size(part)
    if remote.size is not None and have == remote.size:
        return True
    headers = {**_auth(remote.url), "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    timeout = httpx2.Timeout(TIMEOUT_S)
    with get_session().stream("GET", remote.url, headers=headers, timeout=timeout, follow_redirects=True) as response:
        if response.status_code == 416 and remote.size is not None and have > remote.size:
            part.unlink()  # longer than the file: not this file; start over
            progress(-have)
            return False
        _raise_for(response, remote)
        if have and response.status_code == 200:  # the server ignored the Range: it sends the whole file
            progress(-have)
            have = 0
        with part.open("ab" if have else "wb") as out:
            for piece in response.iter_bytes():  # as it arrives: a cut loses nothing already received
                if stop.is_set():
                    raise Cancelled
                out.write(piece)
                progress(len(piece))
    return remote.size is None or _size(part) == remote.size


def _raise_for(response: httpx2.Response, remote: Remote) -> None:
    try:
        hf_raise_for_status(response)
    except HfHubHTTPError as error:
        if response.status_code >= 500:
            raise httpx2.RemoteProtocolError(f"HTTP {response.status_code}") from None  # transient: continued
        raise HubError(_words(error, remote.path, endpoint())) from None


def _auth(url: str) -> dict[str, str]:
    """The person's Hub token (if they logged in) goes to the Hub only, never to a CDN it redirects to."""
    token = get_token() if _host(url) == _host(endpoint()) else None
    return {"authorization": f"Bearer {token}"} if token else {}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def verify(path: Path, checksum: str, stop: threading.Event) -> bool:
    """Whether the file hashes to `checksum` ("sha256:..." or "git-sha1:..."), read in steps that see a stop."""
    kind, _, expected = checksum.partition(":")
    digest = hashlib.sha256() if kind == "sha256" else hashlib.sha1(usedforsecurity=False)
    if kind == "git-sha1":
        digest.update(b"blob %d\0" % path.stat().st_size)
    with path.open("rb") as file:
        while block := file.read(HASH_STEP):
            if stop.is_set():
                raise Cancelled
            digest.update(block)
    return digest.hexdigest() == expected
