package SKPostfix;

# SKPostfix -- a private Postfix instance for the milter tests (never the
# system's): own config_directory, queue and data directories in a temp
# dir, chroot off, listeners on free loopback ports, relaying everything
# to an smtp-sink that dumps each message to a file.
#
#   my $pf = SKPostfix->new(dir => $dir, milter => 'inet:127.0.0.1:PORT',
#       chain => $pem, main => { key => value, ... });
#   $pf->start;  $pf->{smtp}, $pf->{smtps} (465-style), $pf->{sink}
#   $pf->messages            dumped messages (list of strings)
#   $pf->wait_messages(N)    1 once N messages arrived
#   $pf->postfix('reload')   run `postfix -c DIR reload`
#   $pf->stop                (also done at exit)
#
# make_cert($dir, $name[, $type]) writes $dir/$name.key and .crt (a
# self-signed certificate for $name; type rsa or ec) with openssl.
#
# Next hops need DNS names for 127.0.0.1 (sk-milter's PolicySocket looks
# up the SK of the name):
#   private_hosts_reexec([net => 1])  re-runs the script in a private
#                            mount namespace (unshare -m; with net, also a
#                            private network with its own loopback, where
#                            ports 25 and 53 are the test's); the reason if
#                            it cannot
#   private_hosts($dir, NAME...)  bind-mounts $dir/hosts with NAME... for
#                            127.0.0.1 over /etc/hosts, and a resolv.conf
#                            naming 127.0.0.1 (no DNS leaves the machine),
#                            in that namespace

use strict;
use warnings;

use Exporter 'import';
use File::Copy qw(copy);
use SKTest;

our @EXPORT_OK = qw(make_cert private_hosts_reexec private_hosts);

my @instances;

sub new {
    my ($class, %o) = @_;
    my $dir = $o{dir};
    my $self = bless { dir => $dir, etc => "$dir/etc", queue => "$dir/queue",
        smtp => free_port(), smtps => free_port(), sink => free_port(),
        dump => "$dir/sink", nodump => $o{nodump} }, $class;

    chmod 0755, $dir;
    mkdir $_ or die "mkdir $_: $!" for $self->{etc}, $self->{queue},
        "$dir/data", $self->{dump};
    chmod 0755, $self->{queue};
    my ($uid, $gid) = (getpwnam('postfix'))[2, 3];
    chown $uid, $gid, "$dir/data" if defined $uid;
    chmod 01777, $self->{dump};
    spew("$self->{etc}/main.cf", "");
    copy('/etc/postfix/master.cf', "$self->{etc}/master.cf")
        or die "copy master.cf: $!";

    my %main = (
        compatibility_level => '3.6',
        queue_directory => $self->{queue},
        data_directory => "$dir/data",
        maillog_file => "$dir/maillog",
        maillog_file_prefixes => $dir,
        syslog_name => 'postfix-sktest',
        inet_interfaces => '127.0.0.1',
        inet_protocols => 'ipv4',
        myhostname => 'mx.example.org',
        mydestination => '',
        alias_maps => '',
        alias_database => '',
        local_recipient_maps => '',
        relayhost => "[127.0.0.1]:$self->{sink}",
        mynetworks => '127.0.0.0/8',
        smtpd_relay_restrictions => 'permit_mynetworks, reject',
        smtp_dns_support_level => 'disabled',
        smtp_tls_security_level => 'none',
        smtpd_tls_security_level => 'may',
        milter_default_action => 'tempfail',
        %{ $o{main} // {} },
    );
    $main{smtpd_tls_chain_files} = $o{chain} if $o{chain};
    $main{smtpd_milters} = $o{milter} if $o{milter};
    $self->postconf('-e', map { "$_=$main{$_}" } sort keys %main);
    $self->postconf('-MX', 'smtp/inet');
    $self->postconf('-M', "127.0.0.1:$self->{smtp}/inet="
        . "127.0.0.1:$self->{smtp} inet n - n - - smtpd");
    $self->postconf('-M', "127.0.0.1:$self->{smtps}/inet="
        . "127.0.0.1:$self->{smtps} inet n - n - - smtpd "
        . "-o smtpd_tls_wrappermode=yes");
    $self->postconf('-F', '*/*/chroot=n');
    push @instances, $self;
    return $self;
}

sub postconf {
    my ($self, @args) = @_;
    my $r = run_cmd(['postconf', '-c', $self->{etc}, @args]);
    die "postconf @args: $r->{err}" if $r->{rc} != 0;
    return $r->{out};
}

sub postfix {
    my ($self, @args) = @_;
    return run_cmd(['postfix', '-c', $self->{etc}, @args]);
}

sub start {
    my ($self) = @_;

    $self->{sinkpid} = run_daemon(['smtp-sink', '-u', 'nobody', '-c',
        ($self->{nodump} ? () : ('-d', "$self->{dump}/%H%M%S.")),
        "127.0.0.1:$self->{sink}", '100'],
        "$self->{dir}/sink.log");
    wait_for_port($self->{sink}) or die "smtp-sink did not start";
    # `postfix check` (and `postfix start`, again) makes the queue's
    # directories and checks every permission: 6-9 s each on a loaded
    # machine.  The directories postfix-files lists are made here, and a
    # quick-start file skips the checks; they run if the start fails, to
    # say why.
    if ($self->make_queue) {
        spew("$self->{queue}/quick-start", '');
    } else {
        my $c = $self->postfix('check');
        die "postfix check: $c->{err}" . $self->log if $c->{rc} != 0;
    }
    my $r = $self->postfix('start');
    $self->{started} = 1;
    if ($r->{rc} != 0 || !wait_for_file("$self->{queue}/pid/master.pid")) {
        my $c = $self->postfix('check');
        die "postfix start: $r->{err}$c->{err}" . $self->log;
    }
    wait_for_port($self->{smtp}) or die "postfix: port $self->{smtp} closed";
    return $self;
}

# The queue's directories as /etc/postfix/postfix-files lists them
# (owner, group, mode); 0 without that file.
sub make_queue {
    my ($self) = @_;
    my %user = ('$mail_owner' => 'postfix', root => 'root');
    my %group = ('$setgid_group' => 'postdrop', '-' => 'root');
    open(my $f, '<', '/etc/postfix/postfix-files') or return 0;
    while (<$f>) {
        my ($dir, $u, $g, $mode)
            = m{^\$queue_directory/([a-z]+):d:([^:]+):([^:]+):([0-7]+):}
            or next;
        my $path = "$self->{queue}/$dir";
        my $uid = getpwnam($user{$u} // $u);
        my $gid = getgrnam($group{$g} // $g);
        mkdir $path or die "mkdir $path: $!" unless -d $path;
        chown $uid // 0, $gid // 0, $path;
        chmod oct($mode), $path;
    }
    return 1;
}

sub log {
    my ($self) = @_;
    my $f = "$self->{dir}/maillog";
    return -e $f ? "\n" . slurp($f) : '';
}

sub messages {
    my ($self) = @_;
    opendir my $d, $self->{dump} or return ();
    my @f = sort grep { !/^\./ } readdir $d;
    return map { slurp("$self->{dump}/$_") } @f;
}

sub wait_messages {
    my ($self, $n, $secs) = @_;
    return wait_until(sub { scalar($self->messages) >= $n }, $secs // 15)
        ? 1 : 0;
}

sub queue_count {
    my ($self) = @_;
    my $r = run_cmd(['postqueue', '-c', $self->{etc}, '-j']);
    return scalar(() = $r->{out} =~ /"queue_id"/g);
}

sub stop {
    my ($self) = @_;
    if ($self->{started}) {
        my $pidf = "$self->{queue}/pid/master.pid";
        my $pid = -e $pidf ? (slurp($pidf) =~ /(\d+)/)[0] : undef;
        $self->postfix('stop');
        wait_until(sub { !$pid || !kill(0, $pid) }, 10) if $pid;
        $self->{started} = 0;
    }
    stop_daemon($self->{sinkpid}) if $self->{sinkpid};
    delete $self->{sinkpid};
}

sub make_cert {
    my ($dir, $name, $type) = @_;
    my @key = ($type // 'ec') eq 'rsa' ? ('-newkey', 'rsa:2048')
        : ('-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256');
    my $r = run_cmd(['openssl', 'req', '-x509', @key, '-nodes', '-days',
        '30', '-subj', "/CN=$name", '-addext', "subjectAltName=DNS:$name",
        '-keyout', "$dir/$name.key", '-out', "$dir/$name.crt"]);
    die "openssl req: $r->{err}" if $r->{rc} != 0;
    chmod 0600, "$dir/$name.key";
    return ("$dir/$name.key", "$dir/$name.crt");
}

sub private_hosts_reexec {
    my (%o) = @_;
    return 'needs root (mount namespace)' if $> != 0;
    return 'no unshare' unless has_cmd('unshare') && has_cmd('mount');
    return 'no ip' if $o{net} && !has_cmd('ip');
    if ($ENV{SK_PRIVATE_HOSTS}) {
        return undef unless $o{net};
        my $r = run_cmd(['ip', 'link', 'set', 'lo', 'up']);
        return $r->{rc} == 0 ? undef : "ip link set lo up: $r->{err}";
    }
    $ENV{SK_PRIVATE_HOSTS} = 1;
    no warnings 'exec';
    exec('unshare', '-m', ($o{net} ? '-n' : ()), '--propagation', 'private',
        $^X, map({ "-I$_" } @INC), $0, @ARGV);
    return "unshare: $!";
}

sub private_hosts {
    my ($dir, @names) = @_;
    die 'private_hosts outside private_hosts_reexec' unless $ENV{SK_PRIVATE_HOSTS};
    spew("$dir/hosts", "127.0.0.1 localhost @names\n");
    # DNS stays on the machine: a resolver on 127.0.0.1, where none listens
    spew("$dir/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
    for my $f (['hosts', '/etc/hosts'], ['resolv.conf', '/etc/resolv.conf']) {
        my $r = run_cmd(['mount', '--bind', "$dir/$f->[0]", $f->[1]]);
        return "mount --bind $f->[1]: $r->{err}" if $r->{rc} != 0;
    }
    return undef;
}

END {
    local $?;
    $_->stop for @instances;
}

1;
