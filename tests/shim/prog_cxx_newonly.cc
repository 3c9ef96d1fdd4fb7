// prog_cxx_newonly: a correct C++ program that replaces only the scalar operator new, over
// malloc (a counter, say). The default delete, delete[] and new[] pair with it (natively
// glibc's free takes its blocks): no alloc-dealloc-mismatch under the shim. Prints whether
// the replacement saw every allocation.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

static unsigned long g_news;

void *operator new(std::size_t n)
{
    g_news++;
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}

int main()
{
    std::vector<std::string> v;
    for (int i = 0; i < 100; i++)
        v.push_back(std::string(40, 'a'));
    int *p = new int(3);
    delete p;
    int *a = new int[10];
    a[9] = 1;
    delete[] a;
    char *c = new (std::nothrow) char[20];
    delete[] c;
    std::printf("prog_cxx_newonly: %zu strings, news %s\n", v.size(),
                g_news > 100 ? "counted" : "missed");
    return 0;
}
