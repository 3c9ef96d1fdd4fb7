// prog_cxx_pool: a correct C++ program that replaces only the scalar operator new and delete,
// with a bump pool of its own. The standard's other forms (nothrow, array, sized) then reach
// these through their defaults, so every block comes from the pool and goes back to it; a
// block from anywhere else reaching this operator delete aborts. Prints how many calls each
// replacement had.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

alignas(16) static unsigned char g_pool[1 << 20];
static std::size_t g_used;
static unsigned long g_news, g_deletes;

void *operator new(std::size_t n)
{
    g_news++;
    n = (n + 15) & ~std::size_t(15);
    if (g_used + n > sizeof g_pool)
        throw std::bad_alloc();
    void *p = g_pool + g_used;
    g_used += n;
    return p;
}

void operator delete(void *p) noexcept
{
    if (!p)
        return;
    g_deletes++;
    if (p < static_cast<void *>(g_pool) || p >= static_cast<void *>(g_pool + sizeof g_pool)) {
        std::fputs("prog_cxx_pool: a block not from the pool\n", stderr);
        std::abort();
    }
}

void operator delete(void *p, std::size_t) noexcept
{
    operator delete(p);
}

int main()
{
    int *a = new (std::nothrow) int(5);
    delete a;
    int *b = new int[100];
    b[99] = 1;
    delete[] b;
    char *c = new (std::nothrow) char[300];
    c[299] = 2;
    delete[] c;
    std::vector<int> v(1000, 3);
    std::printf("prog_cxx_pool: news %lu deletes %lu, %zu bytes from the pool\n", g_news, g_deletes,
                g_used);
    return 0;
}
