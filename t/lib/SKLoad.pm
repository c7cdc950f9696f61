package SKLoad;

# SKLoad -- slow and idle HTTP clients against a daemon, and timed
# legitimate requests beside them (t/http-limits.t, t/fault/http-load.t).
# Core Perl only.
#
#   hold(PORT, N, mode => 'idle'|'trickle'|'half', every => SECS,
#        from => [ADDR...], reconnect => 1)
#                   fork a child that opens N connections to 127.0.0.1:PORT
#                   (source addresses round robin from ADDR..., default
#                   127.0.0.2) and keeps them: 'idle' sends nothing;
#                   'trickle' sends a request line, then one header line
#                   every SECS (default 10), never the blank line that ends
#                   the headers; 'half' sends half a request line and shuts
#                   its side down (a client gone without a word); with
#                   reconnect, each connection the server closes is made
#                   again at once (a flood that never lets up).  Returns
#                   once every connection was tried; the child counts what
#                   the server closes.
#   held(H)         { opened, open, closed, first, last }: connections made,
#                   still open, closed by the server, and when the first and
#                   the last of those closed (seconds after hold began);
#                   the child writes it twice a second
#   release(H)      stop the child (its sockets close) and return held(H)
#   timed(METHOD, URL[, FORM, TIMEOUT])
#                   one request on a fresh connection from 127.0.0.1:
#                   { code, body, secs } (code 599: no answer in TIMEOUT,
#                   default 30 s)
#   raw(PORT, BYTES[, SECS])
#                   send BYTES on a fresh connection, return what the server
#                   sends back before it closes or SECS (default 5) pass
#   slow_link(PORT, RATE)
#                   a forwarder to 127.0.0.1:PORT that passes answers on
#                   at RATE bytes a second (a slow path between a mirror
#                   and a timeline); when the far end goes away it cuts
#                   the near end at once, keeping what it had not passed
#                   on yet, as a dead host would.  Returns { pid, port,
#                   url }; link_sent(L) is what it passed on so far: {
#                   "request line" => bytes of its answer }
#   addrs(N[, SKIP])  N loopback source addresses, 127.0.0.2 on (after
#                   the first SKIP of them)
#   flood(PORT, FROM, CONNS, MODE, ARG[, SECS])
#                   start build/bench/flood's load: CONNS connections from
#                   the addresses @$FROM, MODE get PATH, post FILE, hold or
#                   churn (issue 40's floods), for SECS at most (an hour);
#                   returns once it runs
#   flood_end(F)    stop it (or, with SECS, wait for its end): { sent,
#                   answered, closed, codes => {C => N} }
#   append_request(FILE, ENTRY)
#                   a request file (flood's) of one POST /append of ENTRY
#   hostile_appends(DIR, SK, INTER)
#                   request files DIR/junk, a valid Bind (of
#                   n0.bench.example, key SK, issued by INTER) carrying 190
#                   junk certificates, and DIR/bad, a malformed Bind of 200:
#                   small end-entity certificates (233 bytes, no CA: never
#                   taken from a cache of CA certificates), each entry
#                   within max_body
#   binds_timeline(DIR, NAME, NFLOOD, NVICTIM, CONF...)
#                   a timeline in DIR/NAME (operator DIR/operator.pub, OCSP
#                   off, conf CONF) whose root build/bench/tl_client posts
#                   (keys DIR/operator.key, DIR/sk.key; CA DIR/root.crt,
#                   DIR/inter.{crt,key}), and its Binds for fresh names as
#                   request files: {flood} of NFLOOD, {victim} of NVICTIM
#                   after them; {err} says what failed
#   split_requests(FILE, N)
#                   a request file (flood's) cut in two: FILE.flood, its
#                   first N requests, and FILE.victim, the rest
#   victim(PORT, FROM, N, MODE, ARG[, SKIP])
#                   N requests one at a time from FROM, each on a fresh
#                   connection, 10 s each at most: { ok, n, p50, p99, max
#                   (seconds), codes => {C => N} }
#   raise_nofile()  raise the soft limit on open files to the hard one

use strict;
use warnings;

use Exporter 'import';
use Errno qw(EAGAIN EINTR EINPROGRESS);
use HTTP::Tiny;
use IO::Poll qw(POLLIN POLLHUP POLLERR);
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline ();

our @EXPORT = qw(hold held release timed raw addrs raise_nofile slow_link
    link_sent flood flood_end victim split_requests append_request
    hostile_appends binds_timeline);

our $FLOOD = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/bench/flood';

sub addrs {
    my ($n, $skip) = @_;
    return map { sprintf '127.0.%d.%d', int(($_ + 2) / 256),
        ($_ + 2) % 256 } ($skip // 0) .. ($skip // 0) + $n - 1;
}

sub raise_nofile {
    # No BSD::Resource in core: ask the shell's ulimit for the hard limit,
    # then set it through prlimit(1) on ourselves.
    my $hard = `sh -c 'ulimit -Hn'`;
    chomp $hard;
    return if $hard !~ /^\d+$/;
    system('prlimit', "--pid=$$", "--nofile=$hard:$hard") if has_cmd('prlimit');
}

sub hold {
    my ($port, $n, %o) = @_;
    my $mode = $o{mode} // 'idle';
    my $every = $o{every} // 10;
    my $again = $o{reconnect} // 0;
    my @from = @{$o{from} // ['127.0.0.2']};
    my $dir = SKTest::tmpdir();
    my $status = "$dir/status";
    my $ready = "$dir/ready";

    my $pid = fork;
    die "hold: fork: $!" unless defined $pid;
    if ($pid == 0) {
        child($port, $n, $mode, $every, $again, \@from, $status, $ready);
        POSIX::_exit(0);
    }
    wait_until(sub { -e $ready || waitpid($pid, POSIX::WNOHANG()) != 0 },
        120);
    return { pid => $pid, status => $status, n => $n };
}

sub child {
    my ($port, $n, $mode, $every, $again, $from, $status, $ready) = @_;
    my $t0 = time;
    my (%sock, %due);
    my ($opened, $closed, $first, $last) = (0, 0, 0, 0);
    my $poll = IO::Poll->new;
    my $stop = 0;
    local $SIG{TERM} = sub { $stop = 1 };

    my $open = sub {
        my ($i) = @_;
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $port, LocalAddr => $from->[$i % @$from],
            Proto => 'tcp', Timeout => 3) or return;
        $s->blocking(0);
        $opened++;
        if ($mode eq 'trickle') {
            syswrite $s, "GET /status HTTP/1.1\r\nHost: x\r\n";
            $due{fileno $s} = time + $every;
        } elsif ($mode eq 'half') {
            syswrite $s, 'GET /sta';
            shutdown $s, 1;
        }
        $sock{fileno $s} = [$s, $i];
        $poll->mask($s => POLLIN);
    };
    $open->($_) for 0 .. $n - 1;
    my $write = sub {
        my $tmp = "$status.tmp";
        open my $f, '>', $tmp or return;
        printf $f "%d %d %d %.2f %.2f\n", $opened, scalar keys %sock,
            $closed, $first, $last;
        close $f;
        rename $tmp, $status;
    };
    $write->();
    if (open my $rf, '>', $ready) {
        close $rf;
    }
    my $next_status = time + 0.5;
    my $line = 0;
    while (!$stop) {
        $poll->poll(0.2);
        for my $s ($poll->handles(POLLIN | POLLHUP | POLLERR)) {
            my $got = sysread $s, my $buf, 4096;
            next if !defined $got && ($! == EAGAIN || $! == EINTR);
            next if $got;
            # EOF or error: the server closed it.
            my $fd = fileno $s;
            my $i = $sock{$fd}[1];
            $poll->remove($s);
            delete $sock{$fd};
            delete $due{$fd};
            close $s;
            $closed++;
            $last = time - $t0;
            $first = $last if $closed == 1;
            $open->($i) if $again && !$stop;
        }
        my $now = time;
        if ($mode eq 'trickle') {
            for my $fd (keys %due) {
                next if $due{$fd} > $now;
                syswrite $sock{$fd}[0], 'X-Slow-' . $line++ . ": y\r\n";
                $due{$fd} = $now + $every;
            }
        }
        if ($now >= $next_status) {
            $write->();
            $next_status = $now + 0.5;
        }
    }
    $write->();
}

sub codes {
    my ($s) = @_;
    return { map { split /:/ } grep { $_ ne '-' } split /,/, $s // '' };
}

sub flood {
    my ($port, $from, $conns, $mode, $arg, $secs) = @_;
    my $dir = SKTest::tmpdir();
    my $pid = fork;
    die "flood: fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDOUT, '>', "$dir/out";
        { exec $FLOOD, 'load', '127.0.0.1', $port, join(',', @$from),
            $conns, $secs // 3600, $mode, defined $arg ? $arg : () }
        POSIX::_exit(127);
    }
    wait_until(sub { -e "$dir/out" && SKTest::slurp("$dir/out") =~ /^running/m
        || waitpid($pid, POSIX::WNOHANG()) != 0 }, 30);
    return { pid => $pid, out => "$dir/out", timed => defined $secs };
}

sub flood_end {
    my ($f) = @_;
    kill 'TERM', $f->{pid} unless $f->{timed};
    waitpid($f->{pid}, 0);
    my $out = -e $f->{out} ? SKTest::slurp($f->{out}) : '';
    my %r = $out =~ /(sent|answered|closed) (\d+)/g;
    $r{codes} = codes(($out =~ / codes (\S+)/)[0]);
    return \%r;
}

sub append_request {
    my ($file, $entry) = @_;
    my $body = 'e=' . join '', map { /[A-Za-z0-9_.-]/ ? $_
        : sprintf('%%%02X', ord) } split //, $entry;
    my $req = "POST /append HTTP/1.1\r\nHost: flood\r\nContent-Type: "
        . "application/x-www-form-urlencoded\r\nContent-Length: "
        . length($body) . "\r\n\r\n$body";
    SKTest::spew($file, length($req) . "\n$req");
    return $file;
}

sub hostile_appends {
    my ($d, $sk, $inter) = @_;
    SKTest::spew("$d/junk.ext", "basicConstraints=CA:FALSE\n"
        . "subjectKeyIdentifier=none\nauthorityKeyIdentifier=none\n");
    SKTimeline::ossl('genpkey', '-algorithm', 'ed25519', '-out',
        "$d/junk.key");
    SKTimeline::ossl('req', '-new', '-key', "$d/junk.key", '-subj', '/CN=j',
        '-out', "$d/junk.csr");
    SKTimeline::ossl('x509', '-req', '-in', "$d/junk.csr", '-signkey',
        "$d/junk.key", '-days', 30, '-extfile', "$d/junk.ext", '-out',
        "$d/junk.crt");
    my $jb = SKTimeline::der_b64("$d/junk.crt");
    my $ee = SKTimeline::issue($d, $inter, $sk, 'n0.bench.example',
        "$d/n0");
    append_request("$d/junk", SKTimeline::bind_entry(
        name => 'n0.bench.example', key => $sk, chain_text => join(',',
            SKTimeline::der_b64($ee), SKTimeline::der_b64("$inter.crt"),
            ($jb) x 190)));
    append_request("$d/bad", "Bind: 1\nCA-Cert-Chain: "
        . join(',', ($jb) x 200) . "\nIncludes-Subdomains: 2\n\n");
    return ("$d/junk", "$d/bad");
}

sub binds_timeline {
    my ($d, $name, $nflood, $nvictim, %conf) = @_;
    my $client = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build')
        . '/bench/tl_client';
    mkdir "$d/$name";
    my $t = SKTimeline::start_timeline("$d/$name",
        operator_key => "$d/operator.pub", ocsp => 'no',
        chunk_interval => 60, sk_budget => 1000000, %conf);
    if (!$t->{up}) {
        $t->{err} = SKTest::slurp($t->{log});
        return $t;
    }
    local $ENV{TL_CLIENT_DUMP} = "$d/$name.binds";
    # A load tool: what it leaves unfreed at exit is no finding (ASan).
    local $ENV{ASAN_OPTIONS} = 'detect_leaks=0';
    my $r = SKTest::run_cmd([$client, '127.0.0.1', $t->{port},
        "$d/operator.key", "$d/sk.key", "$d/root.crt", "$d/inter.crt",
        "$d/inter.key", $nflood + $nvictim, 1]);
    if ($r->{rc} != 0) {
        $t->{err} = "tl_client: $r->{out}$r->{err}";
        return $t;
    }
    ($t->{flood}, $t->{victim}) = split_requests("$d/$name.binds", $nflood);
    return $t;
}

sub split_requests {
    my ($file, $n) = @_;
    open my $in, '<', $file or die "$file: $!";
    binmode $in;
    open my $fl, '>', "$file.flood" or die "$file.flood: $!";
    open my $vi, '>', "$file.victim" or die "$file.victim: $!";
    my $i = 0;
    while (defined(my $len = <$in>)) {
        read($in, my $req, $len) == $len or die "$file: cut short";
        print { $i++ < $n ? $fl : $vi } $len, $req;
    }
    close $_ for $fl, $vi;
    return ("$file.flood", "$file.victim");
}

sub victim {
    my ($port, $from, $n, $mode, $arg, $skip) = @_;
    my $r = SKTest::run_cmd([$FLOOD, 'victim', '127.0.0.1', $port, $from, $n,
        10000, $mode, $arg, defined $skip ? $skip : ()]);
    my %v = $r->{out} =~ /(ok|p50_us|p99_us|max_us) (\d+)/g;
    ($v{n}) = $r->{out} =~ / of (\d+)/;
    return { ok => $v{ok} // 0, n => $v{n} // 0,
        p50 => ($v{p50_us} // 0) / 1e6, p99 => ($v{p99_us} // 0) / 1e6,
        max => ($v{max_us} // 0) / 1e6,
        codes => codes(($r->{out} =~ / codes (\S+)/)[0]),
        out => $r->{out} . $r->{err} };
}

sub held {
    my ($h) = @_;
    my $s = -e $h->{status} ? slurp($h->{status}) : "0 0 0 0 0\n";
    my @v = split ' ', $s;
    return { opened => $v[0], open => $v[1], closed => $v[2],
        first => $v[3], last => $v[4] };
}

sub release {
    my ($h) = @_;
    kill 'TERM', $h->{pid};
    waitpid($h->{pid}, 0);
    return held($h);
}

sub timed {
    my ($method, $url, $form, $timeout) = @_;
    my $ua = HTTP::Tiny->new(timeout => $timeout // 30, keep_alive => 0,
        local_address => '127.0.0.1');
    my $t0 = time;
    my $r = defined $form ? $ua->post_form($url, $form)
        : $ua->request($method, $url);
    return { code => $r->{status}, body => $r->{content},
        secs => time - $t0 };
}

sub raw {
    my ($port, $bytes, $secs) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 3) or return '';
    syswrite $s, $bytes;
    my $out = '';
    my $end = time + ($secs // 5);
    my $poll = IO::Poll->new;
    $poll->mask($s => POLLIN);
    while (time < $end) {
        $poll->poll($end - time) or last;
        my $got = sysread $s, my $buf, 65536;
        last if !$got;
        $out .= $buf;
    }
    close $s;
    return $out;
}

sub slow_link {
    my ($port, $rate) = @_;
    my $l = IO::Socket::INET->new(Listen => 64, LocalAddr => '127.0.0.1',
        LocalPort => 0, Proto => 'tcp', ReuseAddr => 1)
        or die "slow_link: $!";
    my $dir = SKTest::tmpdir();
    my $pid = fork;
    die "slow_link: fork: $!" unless defined $pid;
    if ($pid == 0) {
        link_child($l, $port, $rate, "$dir/sent");
        POSIX::_exit(0);
    }
    my $lport = $l->sockport;
    close $l;
    return { pid => $pid, port => $lport, url => "http://127.0.0.1:$lport",
        sent => "$dir/sent" };
}

sub link_child {
    my ($l, $port, $rate, $sent) = @_;
    my $poll = IO::Poll->new;
    my (%peer, %pair, %bytes);     # fileno => other end; near fd => state
    my $tick = 0.05;
    my $next = time + $tick;
    $l->blocking(0);
    $poll->mask($l => POLLIN);

    my $cut = sub {
        my ($p) = @_;
        delete $pair{fileno $p->{near}};
        for my $s ($p->{near}, $p->{far}) {
            delete $peer{fileno $s};
            $poll->remove($s);
            close $s;
        }
    };
    while (1) {
        $poll->poll($tick);
        for my $s ($poll->handles(POLLIN | POLLHUP | POLLERR)) {
            if ($s == $l) {
                my $c = $l->accept or next;
                my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                    PeerPort => $port, Proto => 'tcp', Timeout => 1);
                if (!$u) {
                    close $c;       # nobody there
                    next;
                }
                $_->blocking(0) for $c, $u;
                my $p = { near => $c, far => $u, buf => '', req => '' };
                $pair{fileno $c} = $p;
                $peer{fileno $c} = $p;
                $peer{fileno $u} = $p;
                $poll->mask($c => POLLIN);
                $poll->mask($u => POLLIN);
                next;
            }
            my $p = $peer{fileno $s} or next;
            my $got = sysread $s, my $buf, 65536;
            next if !defined $got && ($! == EAGAIN || $! == EINTR);
            if (!$got) {
                $cut->($p);
                next;
            }
            if ($s == $p->{near}) {
                ($p->{req}) = $buf =~ /\A(\S+ \S+)/ if $buf =~ /\A[A-Z]+ /;
                $bytes{$p->{req}} //= 0;
                syswrite $p->{far}, $buf;
            } else {
                $p->{buf} .= $buf;
            }
        }
        next if time < $next;
        $next = time + $tick;
        for my $p (values %pair) {
            next if $p->{buf} eq '';
            my $n = syswrite $p->{near}, $p->{buf}, int($rate * $tick) || 1;
            next unless $n;
            substr($p->{buf}, 0, $n) = '';
            $bytes{$p->{req}} += $n;
        }
        if (open my $f, '>', "$sent.tmp") {
            print $f map { "$bytes{$_} $_\n" } sort keys %bytes;
            close $f;
            rename "$sent.tmp", $sent;
        }
    }
}

sub link_sent {
    my ($link) = @_;
    return {} unless -e $link->{sent};
    return { map { /^(\d+) (.*)$/ ? ($2 => $1) : () }
        split /\n/, slurp($link->{sent}) };
}

1;
