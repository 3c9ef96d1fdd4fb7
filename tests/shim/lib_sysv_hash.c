/* A shared library with only a SysV hash table (DT_HASH, linked with --hash-style=sysv), for
 * test_elfsym: its functions must be found through that table too. */
int sysv_one(void);
int sysv_two(int x);
int sysv_three(int x, int y);

int sysv_one(void)
{
    return 1;
}

int sysv_two(int x)
{
    return x * 2;
}

int sysv_three(int x, int y)
{
    return x * y * 3;
}
