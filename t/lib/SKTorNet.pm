package SKTorNet;

# SKTorNet -- a private Tor network on loopback for the t/*.t tests, on top
# of SKTest (tmpdir, free_port, run_daemon, ...).  Nothing leaves the host:
# every tor runs with TestingTorNetwork 1 and knows only our authorities.
#
#   tor_skip()                a reason to skip (tor or tor-gencert missing),
#                             or undef
#   my $net = SKTorNet->start;
#                             3 directory authorities and 3 non-exit relays;
#                             returns once a consensus lists all 6 (about
#                             6 s; 3-4 s more when the keys are made)
#   $net->onion(HSDIR, MAP...)
#                             a tor running an onion service from HSDIR (as
#                             `sk onion` or nginx's sovereign_key_onion_dir
#                             write it); MAP is a HiddenServicePort value,
#                             e.g. "443 127.0.0.1:$port".  Returns its name
#   $net->onion(include => SNIPPET)
#                             the same from a torrc snippet (`sk onion
#                             --torrc`, or DIR.torrc next to nginx's dir)
#   $net->client              a client tor; returns its SocksPort
#   $net->socks_port          that port (undef before client())
#   $net->wait_onion(ADDR, PORT[, SECS])
#                             1 once a SOCKS5 connect to ADDR:PORT through
#                             the client succeeds (polls, 90 s at most; a
#                             new service is reachable ~4.5 s after the
#                             network is up); else 0, and
#                             $net->last_error says why
#   $net->stop_client, $net->stop_onion([NAME]), $net->stop
#                             stop a node (TERM, KILL after 3 s), the onion
#                             services, or the whole network
#   $net->log(NAME)           a node's log: a0..a2, r0..r2, onion0.., client
#                             (onion services and client log [rend] at info)
#   $net->pids                every running tor's pid
#   socks_connect(SOCKSPORT, HOST, PORT[, SECS])
#                             a socket connected through a SOCKS5 proxy
#                             with the proxy resolving HOST, or (undef,
#                             why: tor's reply code in words)
#   fake_socks(LOG, { "HOST:PORT" => LOCALPORT, ... })
#                             no Tor at all: a SOCKS5 proxy that connects
#                             HOST:PORT (a name, as a client through Tor
#                             asks) to 127.0.0.1:LOCALPORT and refuses any
#                             other (host unreachable), for a test of what
#                             a client does with an onion, not of Tor;
#                             returns { pid, port }
#
# One network per test file: start it once, add the onion service and the
# client when the backend is ready, and stop it at the end (or let the END
# block and DESTROY do it; they also run when a test dies, and INT/TERM/HUP
# exit so they run then too).  Each tor also watches the test's pid
# (__OwningControllerProcess) and exits if the test is killed outright.
#
#   use SKTorNet;
#   my $net = SKTorNet->start;
#   $net->onion("$dir/hs", "443 127.0.0.1:$port");    # after `sk onion`
#   my $socks = $net->client;
#   $net->wait_onion($onion, 443) or diag($net->last_error);
#   ... curl --proxy socks5h://127.0.0.1:$socks
#            --connect-to NAME:443:$onion:443 https://NAME/
#   $net->stop_client;                # every route down
#
# As root, tor runs as debian-tor (its package's user); an onion service
# tor runs as the owner of its HiddenServiceDir, which tor wants 0700 and
# owned by the user it runs as.  Set SK_TEST_KEEP=1 to keep the directory
# with every node's torrc and log.
#
# The routers' identity keys and the authorities' v3 keys are cached in
# $TMPDIR/sk-tornet-keys.UID (0700, ours, or not used); SK_TORNET_CACHE
# names another directory, or none when empty.
#
# Why the network is built the way it is (each cost 10-40 s per run until
# found): see "A private Tor network on loopback" in the project's test
# recipes.  In short: guards on the authorities only, a bandwidth file
# that keeps the authorities off the middle and last hops, the voting
# schedule shifted so the first vote comes 4 s after the authorities
# start, and the onion service and client started only once the
# consensus lists every relay (else tor's retry back-off delays the first
# fetch by 30 s).

use strict;
use warnings;

use Exporter 'import';
use File::Path ();
use File::Spec;
use IO::Select;
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Scalar::Util qw(weaken);
use Time::HiRes qw(sleep time);

use SKTest;

our @EXPORT = qw(tor_skip socks_connect fake_socks);

our $TOR = has_cmd('tor');
our $GENCERT = has_cmd('tor-gencert');

my $N_AUTH = 3;
my $N_RELAY = 3;
my @nets;           # weak: every network not yet stopped, for END

sub tor_skip {
    return 'tor is not installed' unless $TOR;
    return 'tor-gencert is not installed' unless $GENCERT;
    return undef;
}

# The user a tor runs as: ourselves, or as root tor's own package user.
sub _default_user {
    return undef if $> != 0;
    return getpwnam('debian-tor') ? 'debian-tor' : undef;
}

# Run commands side by side; die with the first failure's output.
sub _parallel {
    my ($dir, @cmds) = @_;
    my @jobs;
    for my $i (0 .. $#cmds) {
        my $out = "$dir/job$i.out";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            open STDIN, '<', '/dev/null' or POSIX::_exit(127);
            open STDOUT, '>', $out or POSIX::_exit(127);
            open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
            exec @{$cmds[$i]} or POSIX::_exit(127);
        }
        push @jobs, [$pid, $out, $cmds[$i]];
    }
    for my $j (@jobs) {
        waitpid($j->[0], 0);
        my $rc = $?;
        my $text = slurp($j->[1]);
        unlink $j->[1];
        die "@{$j->[2]}: failed ($rc): $text" if $rc;
    }
}

sub _chown_tree {
    my ($user, @paths) = @_;
    return unless $user;
    my ($uid, $gid) = (getpwnam $user)[2, 3];
    my @todo = @paths;
    while (defined(my $p = shift @todo)) {
        chown $uid, $gid, $p or die "chown $p: $!";
        next unless -d $p && !-l $p;
        opendir my $d, $p or die "opendir $p: $!";
        push @todo, map { "$p/$_" } grep { !/^\.\.?$/ } readdir $d;
        closedir $d;
    }
}

# Every router's identity keys and fingerprint, and the authorities' v3
# keys and certificate: from the cache, else made (about 2-3 s: RSA-3072
# for each authority) and cached for the next network.
sub _keys {
    my ($dir, $auth, $relay) = @_;
    my @all = (@$auth, @$relay);
    my $cache = _cache_dir();

    if (!$cache || !_cache_load($cache, @all)) {
        _keys_make($dir, $auth, $relay);
        _cache_store($cache, @all) if $cache;
    }
    for my $n (@all) {
        my $f = "$n->{data}/fingerprint";
        ($n->{fp}) = slurp($f) =~ /^\Q$n->{name}\E ([0-9A-F]{40})$/m
            or die "SKTorNet: $f: no fingerprint for $n->{name}";
    }
    for my $a (@$auth) {
        my $f = "$a->{data}/keys/authority_certificate";
        ($a->{v3ident}) = slurp($f) =~ /^fingerprint ([0-9A-F]{40})$/m
            or die "SKTorNet: $f: no fingerprint line";
    }
}

sub _keys_make {
    my ($dir, $auth, $relay) = @_;
    my @cmds;
    for my $a (@$auth) {
        my $k = "$a->{data}/keys";
        mkdir $k, 0700 or die "mkdir $k: $!";
        push @cmds, [$GENCERT, '--create-identity-key', '--passphrase-fd', '0',
            '-m', '12', '-i', "$k/authority_identity_key",
            '-s', "$k/authority_signing_key", '-c', "$k/authority_certificate"];
    }
    # A throwaway torrc is enough for tor to write a router's identity
    # keys and its fingerprint file.
    for my $n (@$auth, @$relay) {
        spew("$n->{data}/fp.torrc", "DataDirectory $n->{data}\nSocksPort 0\n"
            . "ORPort 127.0.0.1:$n->{orport}\nNickname $n->{name}\n"
            . "Log err stderr\n");
        push @cmds, [$TOR, '--list-fingerprint', '-f', "$n->{data}/fp.torrc"];
    }
    _parallel($dir, @cmds);
    unlink map { ("$_->{data}/fp.torrc", "$_->{data}/lock") } @$auth, @$relay;
}

# The cache: SK_TORNET_CACHE, else a directory of ours in the system's
# temp dir; none if SK_TORNET_CACHE is empty or the directory is not
# ours alone.
sub _cache_dir {
    my $c = $ENV{SK_TORNET_CACHE}
        // File::Spec->tmpdir . "/sk-tornet-keys.$>";
    return undef if $c eq '';
    mkdir $c, 0700 unless -e $c;
    my @st = lstat $c;
    return undef unless -d _ && $st[4] == $> && ($st[2] & 077) == 0;
    return $c;
}

# Copy the cached files of every node; 0 if one is missing or an
# authority certificate expires within a week.
sub _cache_load {
    my ($cache, @nodes) = @_;
    for my $n (@nodes) {
        my $c = "$cache/$n->{name}";
        return 0 unless -f "$c/fingerprint" && -d "$c/keys";
        if ($n->{dirport}) {
            my ($exp) = eval { slurp("$c/keys/authority_certificate") }
                =~ /^dir-key-expires (\d+-\d+-\d+ \d+:\d+:\d+)$/m
                or return 0;
            return 0 if $exp lt POSIX::strftime('%Y-%m-%d %H:%M:%S',
                gmtime(time + 7 * 86400));
        }
    }
    # A concurrent test may be replacing the cache: then make new keys.
    return eval {
        _copy_tree("$cache/$_->{name}", $_->{data}) for @nodes;
        1;
    } // 0;
}

# Publish by rename, so a concurrent test never reads a half-made cache.
sub _cache_store {
    my ($cache, @nodes) = @_;
    my $new = "$cache/new.$$";
    File::Path::remove_tree($new);
    mkdir $new, 0700 or return;
    for my $n (@nodes) {
        mkdir "$new/$n->{name}", 0700 or return;
        _copy_tree($n->{data}, "$new/$n->{name}");
        File::Path::remove_tree("$cache/$n->{name}");
    }
    for my $n (@nodes) {
        rename "$new/$n->{name}", "$cache/$n->{name}";
    }
    File::Path::remove_tree($new);
}

# fingerprint and keys/* of a router's data directory, modes kept.
sub _copy_tree {
    my ($from, $to) = @_;
    mkdir "$to/keys", 0700 or die "mkdir $to/keys: $!" unless -d "$to/keys";
    opendir my $d, "$from/keys" or die "opendir $from/keys: $!";
    my @files = ('fingerprint', map { "keys/$_" } grep { -f "$from/keys/$_" }
        readdir $d);
    closedir $d;
    for my $f (@files) {
        spew("$to/$f", slurp("$from/$f"), (stat "$from/$f")[2] & 0777);
    }
}

sub start {
    my ($class) = @_;
    die tor_skip() . "\n" if tor_skip();

    my $dir = tmpdir();
    # The tors drop to their user and must reach their dirs inside.
    chmod 0755, $dir or die "chmod $dir: $!";
    my $self = bless { dir => $dir, user => _default_user(), nodes => {},
        n_onion => 0 }, $class;
    push @nets, $self;
    weaken($nets[-1]);

    # Relays resolve nothing: keep them off the system's resolver.
    spew("$dir/resolv.conf", "nameserver 127.0.0.1\n");

    my @auth = map { { name => "a$_", orport => free_port(),
        dirport => free_port() } } 0 .. $N_AUTH - 1;
    my @relay = map { { name => "r$_", orport => free_port() } }
        0 .. $N_RELAY - 1;
    for my $n (@auth, @relay) {
        $n->{data} = "$dir/$n->{name}";
        mkdir $n->{data}, 0700 or die "mkdir $n->{data}: $!";
    }

    _keys($dir, \@auth, \@relay);

    # Measured relays only: the authorities, unmeasured, stay off the
    # middle and last hops.
    spew("$dir/bandwidth", int(time) . "\n"
        . join('', map { "node_id=\$$_->{fp} bw=1000\n" } @relay));

    # An authority votes 2 s before the first voting interval boundary
    # after it has started (after about 1-3 s); the relays need the time
    # up to the vote to upload their descriptors (1-3 s here, more under
    # load), else a round is lost (then 10 s).  Start just before a whole
    # second X and put the boundaries at X + 6k (instead of waiting for
    # the clock to reach a multiple of the interval): the first vote comes
    # at X + 4, the consensus at X + 6.
    sleep 0.8 - (time - int(time)) if time - int(time) < 0.8;
    my $offset = (int(time) + 1) % 6;

    $self->{common} = join '',
        "TestingTorNetwork 1\n",
        "PathsNeededToBuildCircuits 0.25\n",
        "__OwningControllerProcess $$\n",
        "SafeLogging 0\n",
        map { "DirAuthority $_->{name} orport=$_->{orport} no-v2 "
            . "v3ident=$_->{v3ident} 127.0.0.1:$_->{dirport} $_->{fp}\n" } @auth;
    my $router = join '',
        "SocksPort 0\n",
        "Address 127.0.0.1\n",
        "AssumeReachable 1\n",
        "ExitRelay 0\n",
        "ExitPolicy reject *:*\n",
        "ContactInfo sk-test\@localhost\n",
        "ServerDNSResolvConfFile $dir/resolv.conf\n";
    my $guards = join ',', map { $_->{fp} } @auth;
    my $authority = join '',
        "AuthoritativeDirectory 1\n",
        "V3AuthoritativeDirectory 1\n",
        "TestingV3AuthInitialVotingInterval 6\n",
        "TestingV3AuthInitialVoteDelay 2\n",
        "TestingV3AuthInitialDistDelay 2\n",
        "TestingV3AuthVotingStartOffset $offset\n",
        "V3AuthVotingInterval 10\n",
        "V3AuthVoteDelay 2\n",
        "V3AuthDistDelay 2\n",
        "V3AuthNIntervalsValid 2\n",
        "TestingDirAuthVoteHSDir *\n",
        "TestingDirAuthVoteGuard $guards\n",
        "TestingDirAuthVoteGuardIsStrict 1\n",
        "V3BandwidthsFile $dir/bandwidth\n";
    for my $n (@auth, @relay) {
        my $torrc = "Nickname $n->{name}\n"
            . "ORPort 127.0.0.1:$n->{orport}\n" . $router
            . ($n->{dirport} ? "DirPort 127.0.0.1:$n->{dirport}\n$authority" : '');
        $self->_add_node($n->{name}, $n->{data}, $torrc);
    }
    $self->{auth} = \@auth;

    $self->_run($_->{name}) for @auth, @relay;

    my $ok = wait_until(sub {
        $self->_check_alive;
        return $self->_consensus_routers >= $N_AUTH + $N_RELAY;
    }, 60);
    die "SKTorNet: no consensus listing all @{[$N_AUTH + $N_RELAY]} relays "
        . "after 60 s\n" . $self->log('a0') unless $ok;
    return $self;
}

# A node's torrc: the common part, then TORRC.  Onion services and the
# client also log the onion service steps (descriptor upload, fetch,
# circuits) at info level: what a failing test needs to see, and what
# wait_onion watches for.
sub _add_node {
    my ($self, $name, $data, $torrc, %opt) = @_;
    my $file = "$self->{dir}/$name.torrc";
    my $user = exists $opt{user} ? $opt{user} : $self->{user};
    mkdir $data, 0700 or die "mkdir $data: $!" unless -d $data;
    _chown_tree($user, $data);
    spew($file, $self->{common}
        . ($opt{rend} ? "Log notice [rend]info stdout\n" : "Log notice stdout\n")
        . ($user ? "User $user\n" : '') . "DataDirectory $data\n" . $torrc);
    $self->{nodes}{$name} = { name => $name, torrc => $file,
        log => "$self->{dir}/$name.log", data => $data };
}

sub _run {
    my ($self, $name) = @_;
    my $n = $self->{nodes}{$name};
    $n->{pid} = run_daemon([$TOR, '-f', $n->{torrc}], $n->{log});
}

sub _check_alive {
    my ($self) = @_;
    for my $n (values %{$self->{nodes}}) {
        next unless $n->{pid};
        next if daemon_alive($n->{pid});
        $n->{pid} = undef;
        die "SKTorNet: tor $n->{name} exited:\n" . slurp($n->{log});
    }
}

# How many routers the first authority's microdescriptor consensus (the
# one clients use) lists; 0 while it has none.
sub _consensus_routers {
    my ($self) = @_;
    my $body = _http_get($self->{auth}[0]{dirport},
        '/tor/status-vote/current/consensus-microdesc') // return 0;
    return scalar(() = $body =~ /^r /mg);
}

sub _http_get {
    my ($port, $path) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 2) or return undef;
    print $s "GET $path HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    my $sel = IO::Select->new($s);
    my $resp = '';
    my $end = time + 3;
    while (time < $end && $sel->can_read($end - time)) {
        my $n = sysread($s, $resp, 65536, length $resp);
        last unless $n;
    }
    close $s;
    return $resp =~ /\AHTTP\/1\.\d 200 .*?\r\n\r\n(.*)\z/s ? $1 : undef;
}

sub onion {
    my ($self, @args) = @_;
    my $name = 'onion' . $self->{n_onion}++;
    my ($conf, $hsdir);
    if ($args[0] eq 'include') {
        my $snippet = $args[1];
        ($hsdir) = slurp($snippet) =~ /^HiddenServiceDir (.*)$/m
            or die "SKTorNet: $snippet: no HiddenServiceDir line";
        $conf = "%include $snippet\n";
    } else {
        ($hsdir, my @map) = @args;
        die "SKTorNet: onion: no HiddenServicePort given" unless @map;
        $conf = "HiddenServiceDir $hsdir\n"
            . join('', map { "HiddenServicePort $_\n" } @map);
    }
    # tor wants the dir owned by the user it runs as.
    my $user = $self->{user};
    if ($> == 0 && -d $hsdir) {
        my $uid = (stat $hsdir)[4];
        $user = $uid == 0 ? undef : scalar getpwuid($uid);
    }
    $self->_add_node($name, "$self->{dir}/$name", "SocksPort 0\n$conf",
        user => $user, rend => 1);
    $self->_run($name);
    return $name;
}

sub client {
    my ($self) = @_;
    if (!$self->{nodes}{client}) {
        $self->{socks} = free_port();
        $self->_add_node('client', "$self->{dir}/client",
            "SocksPort 127.0.0.1:$self->{socks}\n", rend => 1);
    }
    $self->_run('client') unless $self->{nodes}{client}{pid};
    wait_for_port($self->{socks}, 10)
        or die "SKTorNet: client SocksPort did not open:\n" . $self->log('client');
    return $self->{socks};
}

sub socks_port { $_[0]{socks} }

sub last_error { $_[0]{last_error} }

# Asked before the service has uploaded its descriptor, the client gets
# 404s from every HSDir and then does not ask them again for 5 s
# (TestingTorNetwork's requery period): so first wait for our onion
# services' first upload.
sub wait_onion {
    my ($self, $addr, $port, $secs) = @_;
    my $end = time + ($secs // 90);
    my @onions = grep { /^onion/ && $self->{nodes}{$_}{pid} }
        keys %{$self->{nodes}};
    wait_until(sub {
        $self->_check_alive;
        return !grep { $self->log($_) !~ /Uploaded hidden service descriptor \(status 200/ }
            @onions;
    }, $end - time);
    while (1) {
        $self->_check_alive;
        my $left = $end - time;
        my ($s, $why) = socks_connect($self->{socks}, $addr, $port,
            $left < 15 ? $left : 15);
        if ($s) {
            close $s;
            return 1;
        }
        $self->{last_error} = $why;
        return 0 if time + 0.2 >= $end;
        sleep 0.2;
    }
}

my %SOCKS_REPLY = (
    1 => 'general failure', 2 => 'not allowed by ruleset',
    3 => 'network unreachable', 4 => 'host unreachable',
    5 => 'connection refused', 6 => 'TTL expired',
    7 => 'command not supported', 8 => 'address type not supported',
);

# SOCKS5 (RFC 1928), no authentication, CONNECT to a domain name.
sub socks_connect {
    my ($proxy, $host, $port, $secs) = @_;
    $secs //= 30;
    my $end = time + $secs;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $proxy,
        Proto => 'tcp', Timeout => $secs)
        or return (undef, "SOCKS proxy 127.0.0.1:$proxy: $!");
    my $read = sub {
        my ($n) = @_;
        my $buf = '';
        my $sel = IO::Select->new($s);
        while (length $buf < $n) {
            my $left = $end - time;
            return undef if $left <= 0 || !$sel->can_read($left);
            my $got = sysread($s, $buf, $n - length $buf, length $buf);
            return undef unless $got;
        }
        return $buf;
    };
    syswrite($s, "\x05\x01\x00");
    my $m = $read->(2);
    return (undef, 'SOCKS: no method reply') unless defined $m;
    return (undef, 'SOCKS: method refused') unless $m eq "\x05\x00";
    syswrite($s, pack('CCCCC/a*n', 5, 1, 0, 3, $host, $port));
    my $r = $read->(4);
    return (undef, 'SOCKS: no reply (timeout)') unless defined $r;
    my ($ver, $code, undef, $atyp) = unpack 'C4', $r;
    return (undef, sprintf('SOCKS: bad reply version %d', $ver)) if $ver != 5;
    return (undef, sprintf('SOCKS: %s (0x%02x)',
        $SOCKS_REPLY{$code} // 'unknown reply', $code)) if $code;
    my $alen = $atyp == 1 ? 4 : $atyp == 4 ? 16 : undef;
    if (!defined $alen) {
        my $l = $read->(1) // return (undef, 'SOCKS: truncated reply');
        $alen = ord $l;
    }
    defined $read->($alen + 2) or return (undef, 'SOCKS: truncated reply');
    return $s;
}

sub fake_socks {
    my ($log, $map) = @_;
    my $port = free_port();
    my $pid = run_daemon(['perl', "-I$SKTest::ROOT/t/lib", '-MSKTorNet',
        '-e', 'SKTorNet::_fake_socks_serve(@ARGV)', $port, %$map], $log);
    wait_for_port($port, 10) or die "fake_socks: no listener: " . slurp($log);
    return { pid => $pid, port => $port };
}

# fake_socks's server (its own process): one child per connection.
sub _fake_socks_serve {
    my ($port, %map) = @_;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
        LocalPort => $port, Listen => 64, ReuseAddr => 1) or die "listen: $!";
    $SIG{CHLD} = 'IGNORE';
    while (my $c = $srv->accept) {
        my $kid = fork // die "fork: $!";
        if ($kid) {
            close $c;
            next;
        }
        my $read = sub {
            my $buf = '';
            while (length $buf < $_[0]) {
                sysread($c, $buf, $_[0] - length $buf, length $buf) or exit 0;
            }
            return $buf;
        };
        my (undef, $n) = unpack 'C2', $read->(2);
        $read->($n);
        syswrite($c, "\x05\x00");
        my (undef, $cmd, undef, $atyp) = unpack 'C4', $read->(4);
        my $host = $atyp == 3 ? $read->(ord $read->(1)) : '';
        my $to = unpack 'n', $read->(2);
        my $b = $cmd == 1 && $map{"$host:$to"};
        my $up = $b && IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $b);
        print STDERR "CONNECT $host:$to: ", $up ? "127.0.0.1:$b\n"
            : "refused\n";
        syswrite($c, pack('C4a4n', 5, $up ? 0 : 4, 0, 1, "\0" x 4, 0));
        exit 0 unless $up;
        my $sel = IO::Select->new($c, $up);
        while (my @r = $sel->can_read) {
            for my $h (@r) {
                my $got = sysread($h, my $buf, 65536) or exit 0;
                for (my $o = 0; $o < $got;) {
                    $o += syswrite($h == $c ? $up : $c, $buf, $got - $o, $o)
                        // exit 0;
                }
            }
        }
        exit 0;
    }
}

sub log {
    my ($self, $name) = @_;
    my $n = $self->{nodes}{$name} or return '';
    return -f $n->{log} ? slurp($n->{log}) : '';
}

sub pids {
    my ($self) = @_;
    return grep { $_ } map { $_->{pid} } values %{$self->{nodes}};
}

# TERM every node at once, give them 3 s (some tors ignore TERM while
# compressing), then KILL.
sub _stop_nodes {
    my ($self, @names) = @_;
    my @n = grep { $_->{pid} } map { $self->{nodes}{$_} // () } @names;
    kill 'TERM', $_->{pid} for @n;
    wait_until(sub { !grep { daemon_alive($_->{pid}) } @n }, 3);
    for (@n) {
        stop_daemon($_->{pid}, 0);
        $_->{pid} = undef;
    }
}

sub stop_client {
    my ($self) = @_;
    $self->_stop_nodes('client');
}

sub stop_onion {
    my ($self, $name) = @_;
    $self->_stop_nodes($name // grep { /^onion/ } keys %{$self->{nodes}});
}

sub stop {
    my ($self) = @_;
    $self->_stop_nodes(keys %{$self->{nodes}});
}

sub DESTROY {
    my ($self) = @_;
    local $?;
    $self->stop;
}

END {
    local $?;
    $_ && $_->stop for @nets;
}

# A test interrupted by ^C or killed by TERM exits through the END blocks,
# which stop the tors; a handler a test set itself is left alone.
my %SIGNO = (HUP => 1, INT => 2, TERM => 15);
for my $sig (keys %SIGNO) {
    next if $SIG{$sig} && $SIG{$sig} ne 'DEFAULT';
    $SIG{$sig} = sub { exit 128 + $SIGNO{$sig} };
}

1;
