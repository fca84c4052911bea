"""Dynamic tracer: target → stages (eager, dynamo, aot, torchair, capture) → findings → report."""
