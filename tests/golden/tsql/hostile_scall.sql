create table [we ird]]].[Order]]Details; --] (
    [it's] int not null,
    [a b] nvarchar(10) null,
    [[x]]] int not null,
    [名前] nvarchar(20) null,
    [--c] date null,
    constraint [PK_Order]]Details; --] primary key ([it's], [[x]]])
)
go
if object_id(N'[we ird]]].[sp_MSins_we ird]]Order]]Details; --]', N'P') is not null drop procedure [we ird]]].[sp_MSins_we ird]]Order]]Details; --]
go
--INSERT procedure using CALL syntax
create procedure [we ird]]].[sp_MSins_we ird]]Order]]Details; --]
@c1 int,@c2 nvarchar(10),@c3 int,@c4 nvarchar(20),@c5 date
as
begin
insert into [we ird]]].[Order]]Details; --]([it's]
,[a b]
,[[x]]]
,[名前]
,[--c])
values (
 @c1
,@c2
,@c3
,@c4
,@c5
)
end
go
if object_id(N'[we ird]]].[sp_MSupd_we ird]]Order]]Details; --]', N'P') is not null drop procedure [we ird]]].[sp_MSupd_we ird]]Order]]Details; --]
go
--UPDATE procedure using SCALL syntax
create procedure [we ird]]].[sp_MSupd_we ird]]Order]]Details; --]
@c1 int = null,@c2 nvarchar(10) = null,@c3 int = null,@c4 nvarchar(20) = null,@c5 date = null,@pkc1 int,@pkc2 int
,@bitmap binary(1)
as
begin
declare @primarykey_text nvarchar(2048) = N''
if (substring(@bitmap,1,1) & 1 = 1) or (substring(@bitmap,1,1) & 4 = 4)
begin
update [we ird]]].[Order]]Details; --] set
[it's] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [it's] end
,[a b] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [a b] end
,[[x]]] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [[x]]] end
,[名前] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [名前] end
,[--c] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [--c] end
where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[it''s] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[[x]]] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13233
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''[we ird]]].[Order]]Details; --]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
else
begin
update [we ird]]].[Order]]Details; --] set
[a b] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [a b] end
,[名前] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [名前] end
,[--c] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [--c] end
where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[it''s] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[[x]]] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13233
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''[we ird]]].[Order]]Details; --]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
end
go
if object_id(N'[we ird]]].[sp_MSdel_we ird]]Order]]Details; --]', N'P') is not null drop procedure [we ird]]].[sp_MSdel_we ird]]Order]]Details; --]
go
--DELETE procedure using CALL syntax
create procedure [we ird]]].[sp_MSdel_we ird]]Order]]Details; --]
@pkc1 int,@pkc2 int
as
begin
declare @primarykey_text nvarchar(2048) = N''
delete [we ird]]].[Order]]Details; --]
where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[it''s] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[[x]]] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13234
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated DELETE command for Table ''[we ird]]].[Order]]Details; --]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
go
