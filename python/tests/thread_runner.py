"""Runs test code on several Python threads at once."""
import threading


def run_on_threads(work, count):
    """Calls work(i) for i in range(count), each on its own thread, waits for all, then raises in
    the caller the first exception a thread raised (one raised in a thread would be lost)."""
    errors = []

    def guarded(index):
        try:
            work(index)
        except Exception as error:  # reported below, in the calling thread
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
