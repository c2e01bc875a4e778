"""Is Parley protected from hearing itself? Judged from what the microphone actually gets, not assumed.

Protection is lost when a speaker the microphone hears has no working canceller: none at all (not installed), one
switched off, one that failed, or one that stopped removing the echo (less than LOST_ERLE_DB over the last
JUDGE_S of echo). It is back once the canceller removes the echo again, or once no echo reaches the microphone.
"""

from __future__ import annotations

import collections

from audio.events import EchoProtectionLost, EchoProtectionRestored

JUDGE_S = 3.0  # seconds of echo-only audio the canceller is judged on
LOST_ERLE_DB = 3.0  # a canceller removing less than this from the echo is not working at all (a converging or
# briefly thrown-off one removes more; the echo path's guards cover those, and losing barge-in costs the user)
RESTORED_ERLE_DB = 12.0
AUDIBLE_GAIN = 1e-3  # -30 dB: an echo path quieter than this is no loudspeaker in the room (a headset)
FRAMES_PER_S = 50

Fact = EchoProtectionLost | EchoProtectionRestored


class EchoMonitor:
    """Per frame: `observe` what the canceller did to echo-only audio; returns a fact when protection changes."""

    def __init__(self, *, canceller: bool) -> None:
        self._canceller = canceller  # a canceller exists and is switched on
        self._failure: str | None = None
        self._frames: collections.deque[tuple[float, float]] = collections.deque(maxlen=round(JUDGE_S * FRAMES_PER_S))
        self.lost: EchoProtectionLost | None = None

    def missing(self, reason: str, at: float) -> EchoProtectionLost | None:
        """No canceller can run at all (not installed): lost from the start, whatever the room."""
        self._failure = reason
        return self._lose(reason, at)

    def failed(self, reason: str | None, at: float) -> Fact | None:
        """The canceller failed mid-stream (`reason`), or came back (None)."""
        self._failure = reason
        self._frames.clear()
        if reason is not None:
            return self._lose(f"the echo canceller failed: {reason}", at)
        return self._restore(at) if self._canceller else None

    def observe(self, at: float, raw: float, clean: float, *, echo_gain: float | None, echo_only: bool) -> Fact | None:
        """`raw`/`clean`: energy of one frame before and after the canceller; `echo_gain`: the measured path's
        loudest band gain (None before it is measured); `echo_only`: the frame held the echo and nobody talking."""
        if self._failure is not None or echo_gain is None:
            return None
        if echo_gain < AUDIBLE_GAIN:
            return self._restore(at)  # nothing of the speaker reaches the microphone: nothing to protect from
        if not self._canceller:
            return self._lose("echo cancellation is off and the microphone hears the speaker", at)
        if not echo_only:
            return None
        self._frames.append((raw, clean))
        if len(self._frames) < self._frames.maxlen:  # type: ignore[operator]
            return None
        erle = _db(sum(r for r, _ in self._frames) / (sum(c for _, c in self._frames) + 1e-12))
        if erle < LOST_ERLE_DB:
            return self._lose(f"the echo canceller removes only {erle:.0f} dB of the echo", at)
        return self._restore(at) if erle >= RESTORED_ERLE_DB else None

    def _lose(self, reason: str, at: float) -> EchoProtectionLost | None:
        if self.lost is not None:
            return None
        self.lost = EchoProtectionLost(reason, at)
        return self.lost

    def _restore(self, at: float) -> EchoProtectionRestored | None:
        if self.lost is None or self._failure is not None:
            return None
        self.lost = None
        return EchoProtectionRestored(at)


def _db(ratio: float) -> float:
    import math

    return 10 * math.log10(max(ratio, 1e-12))
