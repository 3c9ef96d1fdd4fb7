/* symbolize_linked: the symbolizer of `tlsan replay`, on the libdw it is linked with. */
#include "replay/symbolize.h"
#include "replay/symbolize_libdw.h"

static const struct symbolize_libdw linked = {
#define LINKED(field, name) .field = name,
    SYMBOLIZE_LIBDW_FUNCTIONS(LINKED)
#undef LINKED
};

symbolizer *symbolizer_create(void)
{
    return symbolizer_create_with(&linked);
}
