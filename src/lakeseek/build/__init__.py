"""Building the sorted value -> file index: the job that scans the lake and writes index
files (:mod:`lakeseek.build.job`), and the folding of incremental segments into the main
index (:mod:`lakeseek.build.fold`). Both run as tasks on any :mod:`lakeseek.engine` runner."""
