/* placeholder CLI: being written */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "tlsan: not built yet\n");
    return 2;
}
