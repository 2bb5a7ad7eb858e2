/*
 * record.h — `flamefs-collect record`: samples CPU stacks with eBPF,
 * symbolizes them and commits one store batch per drain.
 */
#ifndef FLAMEFS_RECORD_H
#define FLAMEFS_RECORD_H

/* Runs the record command.  argv[0] is "record"; options are parsed with
 * getopt_long.  Prints its own messages ("flamefs-collect: ...") and
 * returns the process exit status: 0 on success, 1 on error, 2 on a
 * usage error. */
int record_main(int argc, char **argv);

/* Runs the unwind-table command: prints the CFI table record would load
 * for an ELF file (a diagnostic, and what tests compare with readelf).
 * Same conventions as record_main(). */
int unwind_table_main(int argc, char **argv);

#endif
