"""The on-storage index format: index files, lineage manifests and roots. No Spark here."""
