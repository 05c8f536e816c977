// How the Redisson-protocol clients of the interop tests sleep between two looks: until a message
// wakes them or their poll is due, and they say which.
export class wake_up {
  constructor() {
    this.wake = () => {};
  }

  // Called by the subscriber on a message that matters.
  message() {
    this.wake();
  }

  // Resolves 'message' or, after `pollMs`, 'poll'.
  sleep(pollMs) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve('poll'), pollMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = () => {};
        resolve('message');
      };
    });
  }
}
