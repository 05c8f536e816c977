/* RedLock's quorum protocol (docs/design.md, "RedLock"), checked with spin by
   test/model/check.sh: accepted fencing tokens only rise and no two holds are valid at once, with
   N = 3 masters and C = 2 clients (one attempt each, one raise), replies lost, each answer a step
   of its own between which anything else may happen, and one master restarted without
   persistence. (A request lost on the way is not modelled apart: a grant whose reply is lost and
   whose key then expires leaves the master as it found it, but for the counter.)

   Time is abstracted to what the protocol relies on. A client believes in a member (a grant or
   renewal it saw confirmed) until that member's deadline, which comes before the master's key
   expires (the drift allowance); so a key expires only where its owner no longer believes in it,
   and a belief may end at any moment. A hold is valid while its client believes in k members that
   vote. A restart loses the master's keys, and its counter restarts from server time, larger than
   every token before (the clocks' assumption). With REJOIN, a restarted master votes again only
   once no client believes in a grant it made before the restart (the rejoin delay is at least the
   longest lease). spin -DREJOIN=0 finds the counterexample. */

#ifndef REJOIN
#define REJOIN 1
#endif
#define N 3
#define K 2
#define C 2
#define ATTEMPTS 1
#define RAISES 1

byte owner[N];      /* the lock hash's field: the client holding it there + 1, 0 for none */
byte counter[N];    /* the token counter, and the client that recorded it (+ 1) */
byte recorder[N];
byte epoch[N];      /* restarts of the master */
bool excluded[N];   /* may not vote: restarted, not yet rejoined */
byte largest;       /* the largest token any master proposed or recorded: server time after a restart */
byte last_token;    /* the token of the last hold committed */

bool believes[C * N];  /* client c believes it holds master m (index c * N + m) ... */
byte seen[C * N];      /* ... granted or renewed in that epoch of the master */
bool committed[C];

/* Whether client c's belief in master x is a vote: x votes, or x restarted and c cannot know yet
   (it learns on reconnecting; with REJOIN, x votes for no one else meanwhile). */
#define vote(c, x) (believes[(c) * N + (x)] && (!excluded[x] || seen[(c) * N + (x)] != epoch[x]))
#define votes(c) (vote(c, 0) + vote(c, 1) + vote(c, 2))
/* ... and a vote where the token t is recorded as ours. */
#define records(c, x, t) (vote(c, x) && counter[x] == (t) && recorder[x] == (c) + 1)
#define recorded(c, t) (records(c, 0, t) + records(c, 1, t) + records(c, 2, t))

inline believe(c, x) {
  believes[c * N + x] = true;
  seen[c * N + x] = epoch[x]
}

inline note_largest(t) {
  if
  :: t > largest -> largest = t
  :: else -> skip
  fi
}

/* The acquire at master x: granted (a fresh hold proposes counter + 1 and records it as ours),
   refused, or lost on the way there or back. */
inline acquire_at(x) {
  atomic {
    if
    :: !excluded[x] && owner[x] == 0 ->
       owner[x] = c + 1;
       counter[x] = counter[x] + 1;
       recorder[x] = c + 1;
       note_largest(counter[x]);
       if
       :: believe(c, x);
          if
          :: grants < K ->  /* the first k grants decide */
             if
             :: grants > 0 && counter[x] != t -> agree = false
             :: else -> skip
             fi;
             if
             :: counter[x] > t -> t = counter[x]
             :: else -> skip
             fi
          :: else -> skip
          fi;
          grants++
       :: skip  /* the reply is lost: the key is left to expire */
       fi
    :: else -> skip                           /* refused or excluded */
    fi
  }
}

/* The raise at master x: t recorded where our field is (or the lock is free, re-taken) and the
   counter is below t, or at t recorded by us; otherwise refused with the counter. */
inline raise_at(x) {
  atomic {
    if
    :: excluded[x] -> skip
    :: else ->
       if
       :: (owner[x] == 0 || owner[x] == c + 1) &&
          (counter[x] < t || (counter[x] == t && recorder[x] == c + 1)) ->
          owner[x] = c + 1;
          counter[x] = t;
          recorder[x] = c + 1;
          if
          :: believe(c, x)
          :: skip  /* the reply is lost */
          fi
       :: else ->
          if
          :: counter[x] + 1 > next -> next = counter[x] + 1
          :: else -> skip
          fi
       fi
    fi
  }
}

/* A renewal at master x, while the hold is valid: our field extended (re-taken if the master lost
   it), the counter raised to t; a field of another owner ends that member. A hold whose votes fell
   below k is lost for good. */
inline renew_at(x) {
  atomic {
    if
    :: votes(c) < K -> committed[c] = false
    :: else -> skip
    fi;
    if
    :: !committed[c] -> skip
    :: owner[x] == 0 || owner[x] == c + 1 ->
       owner[x] = c + 1;
       if
       :: counter[x] < t -> counter[x] = t; recorder[x] = c + 1
       :: else -> skip
       fi;
       believe(c, x)
    :: else -> believes[c * N + x] = false
    fi
  }
}

/* Every belief dropped, every grant undone; an undo may be lost (the key then expires). */
inline undo_at(x) {
  atomic {
    believes[c * N + x] = false;
    if
    :: owner[x] == c + 1 -> owner[x] = 0
    :: else -> skip
    fi
  }
}

inline give_up() {
  committed[c] = false;
  undo_at(0);
  undo_at(1);
  undo_at(2)
}

proctype client(byte c) {
  byte attempts = 0, raises, t, grants, next;
  bool agree;
  do
  :: attempts < ATTEMPTS ->
     attempts++;
     grants = 0; agree = true; t = 0;
     /* The clients ask the masters in opposite orders, so their attempts can split the votes;
        each answer is a step of its own, between which anything else may happen. */
     if
     :: c == 0 -> acquire_at(0); acquire_at(1); acquire_at(2)
     :: else -> acquire_at(2); acquire_at(1); acquire_at(0)
     fi;
     raises = 0;
     do
     :: grants < K || agree -> break
     :: else ->
        if
        :: raises == RAISES -> break
        :: else -> skip
        fi;
        raises++;
        next = t + 1;
        raise_at(0);
        raise_at(1);
        raise_at(2);
        if
        :: recorded(c, t) >= K -> agree = true
        :: else -> t = next; note_largest(t)
        fi
     od;
     /* Commit: t recorded on k voting masters we hold; no other hold valid; t above every
        earlier token. */
     atomic {
       if
       :: grants >= K && agree && recorded(c, t) >= K ->
          committed[c] = true;
          assert(t > last_token);
          last_token = t;
          assert(!(committed[1 - c] && votes(1 - c) >= K))
       :: else -> skip
       fi
     };
     raises = 0; next = 0; grants = 0; agree = false;  /* no longer needed: not part of the state */
     /* The hold: renewals until the votes fall below k, or a release. */
     do
     :: !committed[c] -> break
     :: committed[c] -> renew_at(0)
     :: committed[c] -> renew_at(1)
     :: committed[c] -> renew_at(2)
     :: committed[c] -> break  /* released */
     od;
     give_up();
     t = 0
  :: else -> break
  od
}

/* Time: a belief reaches its deadline; a key whose owner no longer believes in it expires. */
proctype time_passes() {
  byte i;
  do
  :: atomic { select(i : 0 .. C * N - 1); believes[i] = false; i = 0 }
  :: atomic {
       select(i : 0 .. N - 1);
       if
       :: owner[i] != 0 && !believes[(owner[i] - 1) * N + i] -> owner[i] = 0
       :: else -> skip
       fi;
       i = 0
     }
  od
}

/* No client believes in a grant master x made before its last restart. */
#define fresh(c, x) (!believes[(c) * N + (x)] || seen[(c) * N + (x)] == epoch[x])

/* One master restarts without persistence: keys and counter gone, the counter back at server
   time. With REJOIN it votes again once no belief from before the restart remains. */
proctype restart() {
  byte x;
  select(x : 0 .. N - 1);
  atomic {
    owner[x] = 0;
    counter[x] = largest;
    recorder[x] = 0;
    epoch[x] = epoch[x] + 1;
    excluded[x] = REJOIN
  };
  /* A hold whose votes fell below k meanwhile is lost before the master's vote returns. */
  atomic {
    fresh(0, x) && fresh(1, x) ->
    if
    :: votes(0) < K -> committed[0] = false
    :: else -> skip
    fi;
    if
    :: votes(1) < K -> committed[1] = false
    :: else -> skip
    fi;
    excluded[x] = false
  }
}

init {
  atomic {
    run client(0);
    run client(1);
    run time_passes();
    run restart()
  }
}
