import dagster as dg

# The demo's days and the first production day both fall after this date. The last
# partition is yesterday's: a day is run once it is over, so the schedule's 02:00 tick
# runs the whole of the day before, not the first two hours of its own.
daily_partitions = dg.DailyPartitionsDefinition(start_date="2026-01-01")

# Every step that writes the DuckDB file runs in this pool (limit 1): one writer at a time.
STORE_POOL = "infercache_store"

# What every asset of one day's flow shares: its partitions, the writers' pool, its group.
PARTITION_FLOW = {"partitions_def": daily_partitions, "pool": STORE_POOL, "group_name": "partition_flow"}
