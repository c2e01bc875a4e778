"""Turns, cancellation, the one retry layer, the journal and heard-only history. No Qt, no devices, no models."""
