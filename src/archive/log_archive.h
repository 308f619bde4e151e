/*
 * log_archive.h - the old name of archive/archive.h, kept only while
 * src/worker/runner.c and runner.h (being split elsewhere) still include
 * it: the merge points their includes at "archive/archive.h" and deletes
 * this file. Nothing new includes it.
 */
#ifndef FORGE_LOG_ARCHIVE_H
#define FORGE_LOG_ARCHIVE_H

#include "archive/archive.h"

#endif
