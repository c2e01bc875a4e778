"""Turn-taking: listening → utterance → end of turn → barge-in decision, one owner per decision.

`ears` turns VAD onsets and frames into utterances and hands their words to the conversation; `utterance` is one
utterance's state; `end_of_turn` runs `endpoint`'s pure policy (with `words`' English rules) on each pause;
`barge_in` decides what a detected interruption does; `self_voice` tells Parley's own voice from the person's.
The devices and the signal processing (capture, VAD, echo canceller, barge-in detection) stay in `audio`, below
this package; of the engine, it reads only the value types (`engine.events`, `engine.inbox`) and reaches the
conversation through `ports.ConversationPort`.
"""
