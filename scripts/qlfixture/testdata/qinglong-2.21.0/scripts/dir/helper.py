def greet(v):
    return 'hello %d' % len(v)
