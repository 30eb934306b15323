"""Layouts: how lakeseek lays a lake's rows out in files. The OTree of seed 002 (Qbeast) puts
each row, by its normalized indexed columns, in a cube of a recursive space partition
(:mod:`.cubes`)."""
