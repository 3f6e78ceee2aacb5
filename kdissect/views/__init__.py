"""What users see: terminal views, NDJSON, and the totals and filters they share."""
