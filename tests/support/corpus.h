/* corpus: where the tests find their plan corpora, and the listing of a corpus folder.
 *
 * The project's own corpus (tests/cases, tests/tvm) is always there; the team's shared
 * corpus (../shared beside the clone, or the folder named by the environment variable
 * TLSAN_SHARED_DIR at test time) is an additional check that a plain clone does not have. */
#ifndef TLSAN_TEST_CORPUS_H
#define TLSAN_TEST_CORPUS_H

#include <stdbool.h>
#include <stddef.h>

/* The project's own case corpus: TLSAN_SOURCE_DIR "/tests/cases". Static storage. */
const char *corpus_own_cases(void);
/* The project's own TVM graphs: TLSAN_SOURCE_DIR "/tests/tvm". Static storage. */
const char *corpus_own_tvm(void);
/* The shared corpus folder: $TLSAN_SHARED_DIR when set and non-empty, else the folder
 * configured at build time. Points into the environment or static storage. */
const char *corpus_shared_dir(void);
/* SUB under the shared folder ("cases", "real/tvm") in buf; true when it is a readable
 * folder. */
bool corpus_shared_sub(const char *sub, char *buf, size_t size);
/* True when SUB is a readable folder under the shared corpus; otherwise prints one line
 * saying that the additional check against it did not run, and returns false. */
bool corpus_have_shared(const char *sub);
/* The *.json names of a folder, sorted by strcmp, in *names (free with corpus_free_list).
 * Returns the count; 0 with *names NULL when the folder cannot be read. Aborts the test
 * (cmocka fail) when out of memory. */
size_t corpus_list_json(const char *dir, char ***names);
void corpus_free_list(char **names, size_t n);

#endif
