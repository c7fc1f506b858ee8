"""Mirror an emulated session into the store so any replica can resume it.

How a resume reads it back: docs/architecture.md. When the session changed, at most
every ``[store] checkpoint_interval_s`` (at once when its client leaves, and when the
session stops) a *checkpoint* goes to the store in two fenced writes, always in this
order:

1. ``save``: the record. Its ``state`` holds the shim snapshot, the
   ``server_event_seq`` it was taken at, and the *tail*: the events stamped since the
   last flush. ``last_seq`` stays the head of the replay log as written so far.
2. ``append_events``: the tail goes to the replay log (and acked events are trimmed).

So the log never runs ahead of the snapshot: a replica taking the session over
between the two writes finds every event up to the snapshot in log + tail, and the
snapshot agrees with the last event the client can be replayed. (Were the log ahead,
a response begun after the snapshot would never end, or one already ended would end
twice.) A resumer merges log and tail (``proxy.resume.replay``).

Once a checkpoint is written, the upstream may forget the upstream events it covers:
the persister tells the session, which acknowledges them upstream. A replica taking
the session over resumes the upstream's own session from the snapshot's upstream
seq, so the upstream must still hold everything after it. Without a store there is
nothing to wait for: what was handled is acknowledged.

Writes are fenced by the lease epoch. ``LeaseLost`` means one of two things: another
replica resumed the session (this one lets go: its client gets ``session.replaced``)
or the store lost the keys (Redis restarted empty, or they expired during a long
outage) and nobody else can hold it: the session registers itself again. A store
outage only pauses persistence; live talk never waits on it.

The persister sees its session only through ``MirroredSession`` (``port``).
"""
