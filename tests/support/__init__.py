"""What the tests share: waiting on an event, starting real processes, parallel workers."""
