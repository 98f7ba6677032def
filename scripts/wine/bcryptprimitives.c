/* A stand-in for Windows' bcryptprimitives.dll, for the test harness only (scripts/windows-tests.sh
 * puts it in its own Wine prefix, never in a release). Rust's standard library (1.78+) imports
 * ProcessPrng from bcryptprimitives.dll for its random numbers (HashMap keys); Debian's Wine 8.0
 * has no such DLL, so no Rust program starts under it. This one answers ProcessPrng from
 * RtlGenRandom (advapi32's SystemFunction036), which Wine implements. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
